"""The parts behind :class:`skillnb.skillmemory.SkillMemory` (service layer, pure Python).

``names`` checks that a skill name is a safe file name, ``fileformat`` defines and validates
the JSON file, ``diskfile`` reads, locks and atomically replaces it, and ``prompt`` renders the
LLM-ready summary. Import :class:`~skillnb.skillmemory.SkillMemory` from
:mod:`skillnb.skillmemory`; these modules are internal and may change between releases.
"""
