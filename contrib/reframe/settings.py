'''A minimal ReFrame site configuration for wulf's checks: this machine as
system ``local`` with one partition ``default`` whose jobs are processes
started here. It is what wulf's own test runs the checks with.

A site uses its own configuration instead (or adds its systems to this
one): partitions with their scheduler and launcher (``slurm``/``srun``),
and the same ``system:partition`` names as keys in references.json.
'''

site_configuration = {
    'systems': [
        {
            'name': 'local',
            'descr': 'This machine',
            'hostnames': ['.*'],
            'partitions': [
                {
                    'name': 'default',
                    'descr': 'Processes on this machine',
                    'scheduler': 'local',
                    'launcher': 'local',
                    'environs': ['builtin'],
                    # Benchmarks must not share the machine with each
                    # other: one check at a time.
                    'max_jobs': 1,
                }
            ],
        }
    ],
    'logging': [
        {
            # The run's messages on standard output only (ReFrame's default
            # also keeps a log file in /tmp per run); performance figures
            # in perflogs/ under the prefix, one file per check.
            'handlers': [
                {'type': 'stream', 'name': 'stdout', 'level': 'info',
                 'format': '%(message)s'},
            ],
            'handlers_perflog': [
                {'type': 'filelog', 'prefix': '%(check_system)s/%(check_partition)s',
                 'level': 'info', 'append': True,
                 'format': '%(check_job_completion_time)s|%(check_display_name)s|%(check_perfvalues)s',
                 'format_perfvars': '%(check_perf_var)s=%(check_perf_value)s %(check_perf_unit)s|'},
            ],
        }
    ],
    'environments': [
        {
            # wulf is one static-ish binary: no compiler or modules needed.
            'name': 'builtin',
        }
    ],
}
