"""The parts behind :class:`skillnb.skillmemory.SkillMemory` (service layer, pure Python).

``names`` checks that a skill name is a safe file name, ``fileformat`` defines and validates
the JSON file, and ``prompt`` renders the LLM-ready summary; the file is read, locked and
atomically replaced with the store's file toolkit, :mod:`skillnb.store.durable`. Import
:class:`~skillnb.skillmemory.SkillMemory` from :mod:`skillnb.skillmemory`; these modules are
internal and may change between releases.
"""
