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
                    # ReFrame's own 'builtin' environment (no compiler
                    # or modules: wulf is one binary), not redefined here.
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
            # in perflogs/ under the prefix, one file per check, one line
            # per run: when, check, system:partition, nodes, result, then
            # per variable its value, unit, reference and thresholds (what
            # a trending dashboard reads).
            'handlers': [
                {'type': 'stream', 'name': 'stdout', 'level': 'info',
                 'format': '%(message)s'},
            ],
            'handlers_perflog': [
                {'type': 'filelog', 'prefix': '%(check_system)s/%(check_partition)s',
                 'level': 'info', 'append': True,
                 'format': ('%(check_job_completion_time)s|%(check_display_name)s|'
                            '%(check_system)s:%(check_partition)s|'
                            'nodes=%(check_job_nodelist)s|result=%(check_result)s|'
                            '%(check_perfvalues)s'),
                 'format_perfvars': ('%(check_perf_var)s=%(check_perf_value)s '
                                     '%(check_perf_unit)s ref=%(check_perf_ref)s '
                                     'lower=%(check_perf_lower_thres)s '
                                     'upper=%(check_perf_upper_thres)s|')},
            ],
        }
    ],
}
