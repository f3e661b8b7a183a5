"""The DECICE project's JSON formats, one reader each (``docs/harmonize.md``).

* :mod:`.dt_json`: the digital twin JSON (vertexpools, links, jobs);
* :mod:`.d22`: the D2.2 output document (``{"nodepool": {...}}`` objects), and
  :mod:`.d22_export`, the same format written back with the extra keys its reader takes;
* :mod:`.flat`: NodePool objects and training rows;
* :mod:`.jobs`: the scheduler's job and pod requests.
"""
