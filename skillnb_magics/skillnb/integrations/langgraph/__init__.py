"""SKILL.nb for LangGraph: a checkpointer that keeps threads in a run, and agent tools.

``pip install skillnb[langgraph]``. :class:`SkillnbSaver` is a LangGraph
``BaseCheckpointSaver`` over a :class:`~skillnb.run.Run`; :func:`resume_approved` resumes a
thread whose ``interrupt()`` was answered through the run's approvals; :func:`run_tools`
gives an agent LangChain tools bound to a run.
"""

from skillnb.integrations.langgraph.approvals import answers, resume_approved, resume_on_approval
from skillnb.integrations.langgraph.saver import SkillnbSaver
from skillnb.integrations.langgraph.serde import SkillnbSerializer
from skillnb.integrations.langgraph.threads import gate_name
from skillnb.integrations.langgraph.tools import run_tools

__all__ = [
    "SkillnbSaver",
    "SkillnbSerializer",
    "answers",
    "gate_name",
    "resume_approved",
    "resume_on_approval",
    "run_tools",
]
