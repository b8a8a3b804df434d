'''ReFrame checks for wulf: sweep latency and peak per transport, the
interconnect between two nodes, NAS kernels' Mop/s, and a link matrix's
worst cell.

Every figure is read from wulf's versioned JSON result, never scraped from
its text; the result is kept (``keep_files``) with its trials and the
machines' fingerprints. Sanity fails on a result that is incomplete
(``complete: false``: cut short, a node lost), on one whose share of noisy
points (intervals that missed wulf's precision target) is above
``max_noisy_fraction``, on one carrying a warning that makes its figures
untrustworthy (a transport in a slow mode, a CPU-cost calibration on a busy
machine; ``fail_on_warnings``), on an NPB run that failed or did not
verify, and on a matrix cell that could not be measured: a figure that
fails its reference is then a regression, not a noisy measurement.

Reference values live outside this file, in a JSON file a site keeps per
system and partition (``references.json`` beside this file, or the file
named by the ``WULF_REFRAME_REFERENCES`` environment variable); see that
file for its format. Options are ReFrame variables, set with ``-S``:

    reframe -C settings.py -c wulf_checks.py -r -S wulf=/usr/bin/wulf \\
        -S wulf_sweep_check.budget=10s -S max_noisy_fraction=0.1
'''

import json
import os

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import (parameter, performance_function, run_after,
                                   run_before, sanity_function, variable)
from reframe.core.exceptions import SanityError

HERE = os.path.dirname(os.path.abspath(__file__))


def load_references(check):
    '''The ReFrame reference dict of ``check`` (its key in the references
    file, e.g. ``sweep:tcp``): ``{'system:partition': {var: (value, lower,
    upper, unit)}}``.'''
    path = os.environ.get('WULF_REFRAME_REFERENCES',
                          os.path.join(HERE, 'references.json'))
    with open(path) as f:
        document = json.load(f)
    return {system: {var: tuple(ref) for var, ref in checks[check].items()}
            for system, checks in document.items()
            if not system.startswith('_') and check in checks}


def read_result(test, name):
    '''The JSON result ``name`` the run left in the stage directory; a
    missing or unreadable file fails sanity with the reason.'''
    path = os.path.join(test.stagedir, name)
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise SanityError(f'wulf left no readable result {name}: {e}')


def require_complete(result):
    if not result.get('complete'):
        why = result.get('incomplete_reason', 'no reason recorded')
        raise SanityError(f'wulf result is incomplete: {why}')


#: Warnings whose figures are not to be compared with a reference: a
#: transport in a slow mode (the sizes measured are not the transport's
#: normal path), a whole-CPU-cost calibration on a busy machine.
UNTRUSTED_WARNINGS = ('slow mode', 'whole CPU cost')


def require_trusted(result, check):
    '''Sanity: no warning of :data:`UNTRUSTED_WARNINGS` (unless the check's
    ``fail_on_warnings`` is off).'''
    if not check.fail_on_warnings:
        return
    for w in result.get('warnings', []):
        if w.startswith(UNTRUSTED_WARNINGS):
            raise SanityError(f'wulf result is not trustworthy: {w}')


def require_quiet(noisy, total, check):
    '''Sanity: at most ``max_noisy_fraction`` of ``total`` points noisy.'''
    if total and noisy / total > check.max_noisy_fraction:
        raise SanityError(
            f'{noisy} of {total} points are noisy ({100 * noisy / total:.0f}%, '
            f'above max_noisy_fraction={check.max_noisy_fraction}): their '
            'intervals missed the precision target; a larger budget or a '
            'quieter node helps')


class WulfBase(rfm.RunOnlyRegressionTest):
    '''What every wulf check shares: the binary and the system/environment
    wildcards (wulf needs no compiler or modules of its own).'''

    #: The wulf binary (``-S wulf=/path/to/wulf``).
    wulf = variable(str, value='wulf')
    valid_systems = ['*']
    valid_prog_environs = ['*']
    maintainers = ['wulf']
    tags = {'wulf', 'network'}
    #: Largest share of noisy points (or matrix figures) a result may
    #: have and pass sanity.
    max_noisy_fraction = variable(float, value=0.25)
    #: Whether a slow-mode or untrusted-calibration warning fails sanity.
    # typ.Bool, not bool: `-S fail_on_warnings=false` must read as False
    # (bool('false') is True, and the option silently did nothing).
    fail_on_warnings = variable(typ.Bool, value=True)
    # A benchmark measures the nodes, not the neighbours' jobs: whole
    # nodes under a scheduler (Slurm's --exclusive).
    exclusive_access = True
    # wulf's JSON (trials, fingerprints, warnings) outlives the stage
    # directory: ReFrame copies it to the output directory.
    keep_files = ['result.json']

    #: Key of this check's entries in the references file.
    def reference_key(self):
        raise NotImplementedError

    @run_after('init')
    def set_references(self):
        self.reference = load_references(self.reference_key())

    @run_before('run')
    def set_executable(self):
        self.executable = self.wulf


@rfm.simple_test
class wulf_sweep_check(WulfBase):
    '''One transport's ping-pong sweep: latency and peak throughput.'''

    descr = 'wulf sweep: latency and peak of one transport'
    transport = parameter(['tcp', 'unix', 'shm'])
    #: Message sizes (wulf's --sizes).
    sizes = variable(str, value='1:1Mi')
    #: Time budget of the timed points (wulf's --budget).
    budget = variable(str, value='5s')
    #: A `wulf serve` to measure against (HOST[:PORT]); empty: local peer.
    peer = variable(str, value='')

    def reference_key(self):
        return f'sweep:{self.transport}'

    @run_before('run')
    def set_options(self):
        self.executable_opts = ['sweep', self.transport, '--sizes', self.sizes,
                                '--budget', self.budget, '--quiet',
                                '--json', 'result.json']
        if self.peer:
            self.executable_opts += ['--peer', self.peer]

    @sanity_function
    def complete_result(self):
        r = read_result(self, 'result.json')
        require_complete(r)
        if not r.get('points'):
            raise SanityError('the sweep measured no points')
        require_trusted(r, self)
        require_quiet(r['summary'].get('noisy_points', 0), len(r['points']), self)
        return sn.assert_eq(r['transport'], self.transport)

    @performance_function('')
    def noisy_fraction(self):
        r = read_result(self, 'result.json')
        return r['summary'].get('noisy_points', 0) / max(len(r['points']), 1)

    @performance_function('us')
    def latency(self):
        return read_result(self, 'result.json')['summary']['latency_ns'] / 1e3

    @performance_function('Gbit/s')
    def peak(self):
        r = read_result(self, 'result.json')
        return r['summary']['peak_bits_per_s'] / 1e9


@rfm.simple_test
class wulf_npb_check(WulfBase):
    '''A NAS kernel over one transport: Mop/s per process count.'''

    descr = 'wulf npb: NAS kernel Mop/s over one transport'
    kernel = parameter(['mg'])
    #: Problem class (S, W, A, B, C). W: long enough (about a second a
    #: run) for a figure a reference can hold; S takes milliseconds.
    npb_class = variable(str, value='W')
    #: Transport linking the ranks.
    via = variable(str, value='shm')
    #: Process counts, comma-separated.
    np = variable(str, value='1,2')
    #: Verified runs per process count; the best is reported.
    repetitions = variable(str, value='3')

    def reference_key(self):
        return f'npb:{self.kernel}'

    @run_before('run')
    def set_options(self):
        self.executable_opts = ['npb', self.kernel, '--class', self.npb_class,
                                '--np', self.np, '--via', self.via,
                                '--repetitions', self.repetitions,
                                '--json', 'result.json']

    @sanity_function
    def verified_result(self):
        r = read_result(self, 'result.json')
        require_complete(r)
        if not r.get('runs'):
            raise SanityError('no NPB run in the result')
        for run in r['runs']:
            where = f"{run['via']} np={run['nprocs']}"
            if run.get('error'):
                raise SanityError(f"{where} failed: {run['error']}")
            if not run['outcomes'] or not all(o.get('verified')
                                              for o in run['outcomes']):
                raise SanityError(f'{where} did not verify')
        return True

    @run_before('performance')
    def set_perf_variables(self):
        # One variable per process count: mops_np1, mops_np2...
        self.perf_variables = {
            f'mops_np{n}': sn.make_performance_function(
                self._best_mops, 'Mop/s', int(n))
            for n in self.np.split(',')
        }

    def _best_mops(self, nprocs):
        for run in read_result(self, 'result.json')['runs']:
            if run['nprocs'] == nprocs and run['via'] == self.via:
                return run['best_mop_s']
        raise SanityError(f'no run with {nprocs} processes over {self.via}')


def round_cells(result):
    '''The cells of the measuring rounds: one per ordered pair. (wulf
    measures a suspicious cell's bandwidth again after the rounds, as an
    extra ``remeasure`` cell without a latency.)'''
    return [c for c in result['cells'] if not c.get('remeasure')]


def require_cells(result, check):
    '''Sanity of a matrix: every cell measured, few noisy figures, no
    untrusted warning.'''
    names = [n['name'] for n in result['nodes']]
    figures = noisy = 0
    for c in round_cells(result):
        if c.get('error') or not c.get('latency') or not c.get('bandwidth'):
            raise SanityError(f"cell {names[c['from']]} -> {names[c['to']]}"
                              f" not measured: {c.get('error')}")
        for f in (c['latency'], c['bandwidth']):
            figures += 1
            noisy += bool(f.get('noisy'))
    require_trusted(result, check)
    require_quiet(noisy, figures, check)


def worst_latency_us(result):
    return max(c['latency']['median_ns'] for c in round_cells(result)) / 1e3


def worst_bandwidth_gbits(result):
    return min(c['bandwidth']['bits_per_s'] for c in round_cells(result)) / 1e9


@rfm.simple_test
class wulf_interconnect_check(WulfBase):
    '''The interconnect between two nodes, both ways: a ping-pong for the
    latency and a stream for the bandwidth, from a two-node ``wulf
    matrix``. Under a scheduler, ReFrame's launcher (srun) starts one wulf
    on each of the job's two nodes and the first coordinates: no server to
    start by hand. Sanity also fails when the two ends are one machine.'''

    descr = 'wulf: latency and bandwidth between two nodes'
    num_tasks = 2
    num_tasks_per_node = 1
    #: How the second wulf starts. Empty: the partition's launcher starts
    #: both (srun, one task per node). ``lab:NAME`` (with ``hosts``): two
    #: nodes of a wulf lab; ``ssh`` (with ``hosts``): over ssh.
    launch = variable(str, value='')
    #: The two nodes when ``launch`` is set (``node1,node2``).
    hosts = variable(str, value='')
    #: Transport between the nodes (wulf's --via).
    via = variable(str, value='tcp')
    #: Time budget of the measuring rounds.
    budget = variable(str, value='3s')

    def reference_key(self):
        return f'interconnect:{self.via}'

    @run_after('init')
    def one_task_when_wulf_launches(self):
        # One wulf coordinates and starts the other itself.
        if self.launch:
            self.num_tasks = 1

    @run_after('setup')
    def skip_on_one_machine(self):
        # Without a launcher that places one task per node, and without
        # `launch`, there is no second node to measure against.
        launcher = self.current_partition.launcher_type.registered_name
        self.skip_if(not self.launch and launcher == 'local',
                     'needs two nodes: a partition whose launcher starts one '
                     'task per node (srun), or launch=lab:NAME or ssh with hosts')

    @run_before('run')
    def set_options(self):
        self.executable_opts = ['matrix', '--via', self.via, '--budget',
                                self.budget, '--quiet', '--json', 'result.json']
        if self.launch:
            self.executable_opts += ['--launch', self.launch]
        if self.hosts:
            self.executable_opts += ['--hosts', self.hosts]

    @sanity_function
    def two_nodes_measured(self):
        r = read_result(self, 'result.json')
        require_complete(r)
        if len(r['nodes']) != 2:
            raise SanityError(f"{len(r['nodes'])} nodes measured, not 2")
        machines = {(n.get('host') or {}).get('hostname') for n in r['nodes']}
        if len(machines) != 2:
            raise SanityError('both ends ran on one machine '
                              f'({machines.pop()}): not an interconnect')
        require_cells(r, self)
        return sn.assert_eq(len(round_cells(r)), 2)

    @performance_function('us')
    def latency(self):
        return worst_latency_us(read_result(self, 'result.json'))

    @performance_function('Gbit/s')
    def bandwidth(self):
        return worst_bandwidth_gbits(read_result(self, 'result.json'))


@rfm.simple_test
class wulf_matrix_check(WulfBase):
    '''The all-pairs link matrix: its worst cell's latency and bandwidth.'''

    descr = 'wulf matrix: worst link of every pair of nodes'
    #: The nodes (wulf's --hosts; Slurm's compact syntax works). Empty:
    #: the job's own nodes (set num_tasks to the node count and one task
    #: per node; the partition's launcher, srun, starts one wulf per node
    #: and the first coordinates).
    hosts = variable(str, value='n[1-3]')
    #: How agents start: local (simulated nodes on this machine), ssh,
    #: slurm. Empty: wulf's default (srun in an allocation, else ssh).
    launch = variable(str, value='local')
    #: Time budget of the measuring rounds.
    budget = variable(str, value='3s')

    def reference_key(self):
        return 'matrix'

    @run_before('run')
    def set_options(self):
        self.executable_opts = ['matrix', '--budget', self.budget, '--quiet',
                                '--json', 'result.json']
        if self.hosts:
            self.executable_opts += ['--hosts', self.hosts]
        if self.launch:
            self.executable_opts += ['--launch', self.launch]

    @sanity_function
    def every_cell_measured(self):
        r = read_result(self, 'result.json')
        require_complete(r)
        require_cells(r, self)
        return sn.assert_gt(len(round_cells(r)), 0)

    @performance_function('us')
    def worst_latency(self):
        return worst_latency_us(read_result(self, 'result.json'))

    @performance_function('Gbit/s')
    def worst_bandwidth(self):
        return worst_bandwidth_gbits(read_result(self, 'result.json'))
