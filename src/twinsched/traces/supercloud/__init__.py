"""MIT SuperCloud: the Slurm job tables and the per-node series (``docs/store.md``).

* :mod:`.jobs`: the job tables (``slurm-log*.csv``) as a scenario;
* :mod:`.nodes`: each node's hardware, from the published node types or the jobs;
* :mod:`.tables`: the table payloads the twin's ``/harmonize`` reads;
* :mod:`.series`: per-node utilisation series.
"""
