"""User settings of the notebook integration, as traitlets configuration (edge layer).

``SkillNB`` is registered with the shell, so settings work the usual IPython ways::

    %config SkillNB.verbosity = "quiet"
    %config SkillNB.state_dir = "/data/runs/report"
    %config SkillNB.profile = "demo"
    %config SkillNB.store = "postgresql://ann@db.example.com/runs"   # a team store
    %config SkillNB.suggest = "auto"     # keep what cells produce worth keeping ("off": no offers)
    c.SkillNB.user = "ana"          # in ipython_config.py
"""

from __future__ import annotations

from traitlets import Bool, CaselessStrEnum, Unicode
from traitlets.config import Configurable

__all__ = ["SUGGEST_MODES", "VERBOSITIES", "SkillNB"]

VERBOSITIES = ("quiet", "normal", "verbose")
SUGGEST_MODES = ("on", "auto", "off")


class SkillNB(Configurable):
    """Settings of the SKILL.nb magics (``%config SkillNB.<name> = value``)."""

    state_dir = Unicode(
        "",
        help="Keep the run in this folder instead of the notebook's sidecar (.skillnb/<stem>/).",
    ).tag(config=True)

    store = Unicode(
        "",
        help="A team store (postgresql://user@host/db) instead of sidecars ($SKILLNB_STORE).",
    ).tag(config=True)

    run_name = Unicode(
        "",
        help="The run's name in the team store (default: the notebook's path from the "
        "Jupyter root; %skillnb use --name NAME sets it).",
    ).tag(config=True)

    verbosity = CaselessStrEnum(
        VERBOSITIES,
        default_value="normal",
        help="quiet: outputs only for blocks, errors and waits; verbose: gate details too.",
    ).tag(config=True)

    user = Unicode(
        "",
        help="Who approvals and milestones are attributed to ($SKILLNB_USER or the OS user).",
    ).tag(config=True)

    profile = Unicode(
        "",
        help="The run profile ($SKILLNB_PROFILE, else 'default'): gates whose bypass_in names "
        "it are not evaluated, and each bypass is recorded. The workflow must declare it.",
    ).tag(config=True)

    memory = Bool(
        True,
        help="Feed the workflow's skill memory ($SKILLNB_HOME/memory/<skill>.json).",
    ).tag(config=True)

    suggest = CaselessStrEnum(
        SUGGEST_MODES,
        default_value="on",
        help="on: offer what a cell produced worth keeping (Keep? …); auto: keep it; off: no.",
    ).tag(config=True)

    extractor = Unicode(
        "",
        help='A "module:function" that reads pinned text (%formalize --note) into values to offer.',
    ).tag(config=True)

    mirror_values = Bool(
        False,
        help="Save full fact values in the notebook's outputs (default: previews only; the "
        "values stay in the 0600 sidecar). Only for notebooks you keep private.",
    ).tag(config=True)

    widgets = Bool(
        True,
        help="Show the interactive RunView (ipywidgets) where a widget frontend is available.",
    ).tag(config=True)
