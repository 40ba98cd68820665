"""Warm trials of a job started as 2 ranks (gloo on the CPU), through the
binary (AUTOTUNE_BINARY, which ctest sets): under torch.multiprocessing.spawn
and under torchrun, every rank runs every trial with the same knobs, the
start-up is paid once, and a rank that crashes fails its trial and the next
one starts on a fresh launch."""
import json
import os
import socket
import sys
import tempfile
import unittest

from trial_common import require_torch
from test_trial_through_autotune import tune_in

# Each rank: its launch in launches.txt, each trial's knobs as it ran them
# in ran.txt; a DDP step on a real DataLoader whose workers are a knob.
# CRASH_BATCH: rank 1 kills itself (SIGSEGV) at its 10th step of the trial
# with that batch size and no loader workers.
RANK_BODY = """
import json, os, signal, sys
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, Dataset
import autotune_trial

CRASH_BATCH = int(os.environ.get("CRASH_BATCH", "0"))


class Ds(Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        return torch.full((32,), float(i % 7))


def note(name, row):
    with open(name, "a") as f:
        f.write(json.dumps(row) + "\\n")


def run_rank():
    rank = dist.get_rank()
    note("launches.txt", {"rank": rank, "pid": os.getpid(), "omp": os.environ.get("OMP_NUM_THREADS")})
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for p in autotune_trial.trials(batch_size=8, num_workers=0):
        note("ran.txt", {"trial": int(os.environ["AUTOTUNE_TRIAL"]), "rank": rank, "pid": os.getpid(),
                         "batch_size": p.batch_size, "num_workers": p.num_workers, "threads": p.get("threads"),
                         "torch_threads": torch.get_num_threads()})
        loader = DataLoader(Ds(), batch_size=p.batch_size, num_workers=p.num_workers)
        with autotune_trial.Meter(p, warmup_s=0.1, window_s=0.05, max_s=0.8) as m:
            for i, x in enumerate(m.batches(loader)):
                if (p.batch_size, p.num_workers) == (CRASH_BATCH, 0) and rank == 1 and i == 10:
                    os.kill(os.getpid(), signal.SIGSEGV)
                loss = model(x).sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
    dist.destroy_process_group()
"""

SPAWNED = RANK_BODY + """

def spawned(rank, port):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    run_rank()


if __name__ == "__main__":
    import socket
    import torch.multiprocessing as mp
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(spawned, args=(port,), nprocs=2)
"""

LAUNCHED = RANK_BODY + """

if __name__ == "__main__":
    dist.init_process_group("gloo")
    run_rank()
"""

SPACE = ("space:\n  batch_size: [8, 16, 32]\n  num_workers: [0, 1]\n"
         "search: {strategy: grid, budget: %d, remeasure: 0, explain: false, race: false, busy: ignore}\n")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(port):
    # Debian 12's torch (1.13 on Python 3.11) cannot read torchrun's default
    # `--redirects 0` (Std.from_str misses Std.NONE under 3.11's enum); a
    # mapping that names no local rank leaves every rank's output alone.
    return (f"{sys.executable} -m torch.distributed.run --nnodes 1 --nproc_per_node 2 --master_addr 127.0.0.1 "
            f"--master_port {port} --redirects 9:0 --tee 9:0 job.py")


class WarmRanks(unittest.TestCase):
    def tune(self, folder, job, trials, command=None, env=""):
        if not os.environ.get("AUTOTUNE_BINARY"):
            self.skipTest("AUTOTUNE_BINARY not set (ctest sets it)")
        extra = ", warm: true" + (f", env: {{{env}}}" if env else "")
        p = tune_in(folder, job, SPACE % trials, timeout=300, command=command, workload_extra=extra)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return p

    def ran(self, folder):
        """{trial: {rank: (batch_size, num_workers, pid)}} from what each rank wrote."""
        out = {}
        with open(os.path.join(folder, "ran.txt")) as f:
            for row in map(json.loads, f):
                by_rank = out.setdefault(row["trial"], {})
                self.assertNotIn(row["rank"], by_rank, f"rank {row['rank']} ran trial {row['trial']} twice")
                by_rank[row["rank"]] = (row["batch_size"], row["num_workers"], row["pid"])
        return out

    def launches(self, folder):
        with open(os.path.join(folder, "launches.txt")) as f:
            return [json.loads(line) for line in f]

    def check_warm_job(self, folder, job, command=None):
        trials = 4
        p = self.tune(folder, job, trials, command=command)
        finished = finishes(folder)
        self.assertGreaterEqual(len(finished), trials, finished)
        self.assertEqual({t["status"] for t in finished}, {"ok"}, [t.get("reason") for t in finished])
        ran = self.ran(folder)
        self.assertEqual(sorted(ran), sorted(t["trial"] for t in finished))
        for t in finished:
            by_rank = ran[t["trial"]]
            self.assertEqual(sorted(by_rank), [0, 1], f"trial {t['trial']}: ranks {sorted(by_rank)}")
            knobs = {rank: v[:2] for rank, v in by_rank.items()}
            self.assertEqual(knobs[0], knobs[1], f"trial {t['trial']}: the ranks ran different knobs")
            self.assertEqual(knobs[0], (t["config"]["batch_size"], t["config"]["num_workers"]), t)
        # Start-up paid once: one launch per rank, every trial in it.
        self.assertEqual(sorted(r["rank"] for r in self.launches(folder)), [0, 1])
        self.assertEqual(len({v[2] for by_rank in ran.values() for v in by_rank.values()}), 2)
        first, later = finished[0]["metrics"], [t["metrics"] for t in finished[1:]]
        for m in later:
            self.assertLess(m["startup_seconds"], first["startup_seconds"] / 2, (first, m))
        # The job's pace is its slowest rank's; each rank's is kept.
        # A rank whose warm-up had not ended when the trial stopped timed no
        # window and reports no pace (seen on a busy machine); the pace is
        # then the slowest of those that did, and at least one did.
        for t in finished:
            m = t["metrics"]
            self.assertEqual(m["world_size"], 2, m)
            paces = [m[f"rank{k}_pace"] for k in (0, 1) if f"rank{k}_pace" in m]
            self.assertTrue(paces, m)
            self.assertAlmostEqual(m["rank_pace_min"], min(paces), delta=1e-6)
            self.assertAlmostEqual(t["throughput"], 2 * m["rank_pace_min"], delta=1e-6 * t["throughput"])
            for k in (0, 1):
                self.assertEqual(f"rank{k}_pace" in m, f"rank{k}_data_wait" in m, m)
        self.assertTrue(any("rank1_pace" in t["metrics"] for t in finished), finished)
        self.assertNotIn("never entered autotune_trial.trials()", p.stdout + p.stderr)
        return finished

    @require_torch
    def test_spawned_ranks_run_every_warm_trial_with_the_same_knobs(self):
        with tempfile.TemporaryDirectory() as d:
            finished = self.check_warm_job(d, SPAWNED)
            with open(os.path.join(d, "tuned.journal.trials", f"trial-{finished[-1]['trial']}", "stderr.txt")) as f:
                self.assertNotIn("never entered", f.read())

    @require_torch
    def test_torchrun_ranks_run_every_warm_trial_with_the_same_knobs(self):
        with tempfile.TemporaryDirectory() as d:
            self.check_warm_job(d, LAUNCHED, command=torchrun(free_port()))

    def check_crash(self, folder, job, command=None, says="SIGSEGV"):
        # Grid order: batch 8 (workers 0, 1), then 16: rank 1 dies in trial 3 (16, 0).
        self.tune(folder, job, 4, command=command, env="CRASH_BATCH: '16'")
        finished = finishes(folder)
        statuses = [(t["config"]["batch_size"], t["status"]) for t in finished]
        crashed = [t for t in finished if (t["config"]["batch_size"], t["config"]["num_workers"]) == (16, 0)]
        self.assertEqual(len(crashed), 1, statuses)
        self.assertEqual(crashed[0]["status"], "crash", crashed[0].get("reason"))
        self.assertIn(says, crashed[0]["reason"])
        after = [t for t in finished if t["trial"] > crashed[0]["trial"]]
        self.assertTrue(after, statuses)
        self.assertEqual({t["status"] for t in finished if t is not crashed[0]}, {"ok"}, statuses)
        # Two launches of each rank: the first, and the one after the crash.
        self.assertEqual(sorted(r["rank"] for r in self.launches(folder)), [0, 0, 1, 1])
        ran = self.ran(folder)
        before = {v[2] for t, by_rank in ran.items() if t < crashed[0]["trial"] for v in by_rank.values()}
        later = {v[2] for t, by_rank in ran.items() if t > crashed[0]["trial"] for v in by_rank.values()}
        self.assertEqual(len(later), 2)
        self.assertFalse(before & later, "the trial after the crash ran in the crashed launch")
        for t in after:
            knobs = {rank: v[:2] for rank, v in ran[t["trial"]].items()}
            self.assertEqual(knobs[0], knobs[1])

    @require_torch
    def test_a_spawned_rank_that_crashes_fails_its_trial_and_the_next_starts_on_a_fresh_launch(self):
        with tempfile.TemporaryDirectory() as d:
            self.check_crash(d, SPAWNED, says="rank 1 terminated with signal SIGSEGV")

    @require_torch
    def test_a_torchrun_rank_that_crashes_fails_its_trial_and_the_next_starts_on_a_fresh_launch(self):
        with tempfile.TemporaryDirectory() as d:
            self.check_crash(d, LAUNCHED, command=torchrun(free_port()), says="Signal 11 (SIGSEGV)")


    @require_torch
    def test_threads_reach_every_rank_cold_and_warm(self):
        # Cold: OMP_NUM_THREADS in the job's environment as it starts; warm:
        # each trial's torch.set_num_threads in every rank (the pool was
        # sized by the first trial's).
        space = ("space:\n  threads: [1, 2]\n  batch_size: [8]\n  num_workers: [0]\n"
                 "search: {strategy: grid, remeasure: 0, explain: false, race: false, busy: ignore}\n")
        if not os.environ.get("AUTOTUNE_BINARY"):
            self.skipTest("AUTOTUNE_BINARY not set (ctest sets it)")
        for warm in (False, True):
            with self.subTest(warm=warm), tempfile.TemporaryDirectory() as d:
                p = tune_in(d, SPAWNED, space, timeout=300, workload_extra=f", warm: {str(warm).lower()}")
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                finished = finishes(d)  # a drift control (the machine's load changed) runs like the others
                self.assertEqual([t["status"] for t in finished if not t.get("control")], ["ok", "ok"], finished)
                with open(os.path.join(d, "ran.txt")) as f:
                    rows = [json.loads(line) for line in f]
                self.assertEqual(len(rows), 2 * len(finished))
                for t in finished:
                    threads = t["config"]["threads"]
                    ran = [r for r in rows if r["trial"] == t["trial"]]
                    self.assertEqual(sorted(r["rank"] for r in ran), [0, 1])
                    for r in ran:
                        self.assertEqual((r["threads"], r["torch_threads"]), (threads, threads), r)
                launches = self.launches(d)
                self.assertEqual(len(launches), 2 if warm else 2 * len(finished))
                first = str(finished[0]["config"]["threads"])
                self.assertEqual({r["omp"] for r in launches}, {first} if warm else {"1", "2"})


    @require_torch
    def test_the_summary_names_the_rank_whose_loader_starved_it(self):
        # Rank 1's samples take 3 ms each to make, rank 0's none: rank 1
        # waits for data, rank 0 for rank 1's gradients (computing, as its
        # meter sees it). The why: lines say which rank starved.
        if not os.environ.get("AUTOTUNE_BINARY"):
            self.skipTest("AUTOTUNE_BINARY not set (ctest sets it)")
        job = SPAWNED.replace("        return torch.full((32,), float(i % 7))",
                              "        if dist.get_rank() == 1:\n"
                              "            import time\n"
                              "            time.sleep(0.003)\n"
                              "        return torch.full((32,), float(i % 7))")
        self.assertNotEqual(job, SPAWNED)
        space = ("space:\n  batch_size: [8]\n  num_workers: [0]\n"
                 "search: {strategy: grid, remeasure: 0, explain: false, race: false, busy: ignore, "
                 "initial: [{batch_size: 8, num_workers: 0}]}\n")
        with tempfile.TemporaryDirectory() as d:
            p = tune_in(d, job, space, timeout=300)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            m = finishes(d)[0]["metrics"]
            self.assertEqual(m["rank_waiting_most"], 1, m)
            self.assertRegex(p.stdout, r"rank 1 starved: it waited for data \d+% of its time, rank 0 \d+%")

    def test_processes_that_cannot_yet_tell_their_ranks_each_enter_without_waiting(self):
        # Two processes of one worker, with no rank known as they enter
        # trials() (a process group made inside the loop): each says it has
        # entered, the second after the first was answered, and autotune
        # answers both (unanswered, a process waits 10 s for it).
        if not os.environ.get("AUTOTUNE_BINARY"):
            self.skipTest("AUTOTUNE_BINARY not set (ctest sets it)")
        job = """
            import os, sys, time
            import autotune_trial
            for p in autotune_trial.trials(batch_size=4):
                with open("entered.txt", "a") as f:
                    f.write(f"{time.monotonic() - float(sys.argv[1])}\\n")
                break
            """
        answered = "while [ ! -e entered.txt ]; do sleep 0.01; done"  # the first process's trial began
        now = f'$({sys.executable} -c "import time; print(time.monotonic())")'
        command = (f"{sys.executable} job.py {now} & {answered}; {sys.executable} job.py {now}; wait; "
                   """echo '{"throughput": 1}'""")
        with tempfile.TemporaryDirectory() as d:
            p = tune_in(d, job, "space:\n  batch_size: [4]\nsearch: {strategy: grid, remeasure: 0, explain: false}\n",
                        command=command.replace("'", "''"), workload_extra=", warm: true")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(os.path.join(d, "entered.txt")) as f:
                waits = [float(line) for line in f]
            self.assertEqual(len(waits), 2)
            self.assertLess(max(waits), 5.0, waits)


def finishes(folder):
    """The journal's finished search trials, in order."""
    with open(os.path.join(folder, "tuned.journal.jsonl")) as f:
        rows = [json.loads(line) for line in f if '"finish"' in line]
    return sorted(rows, key=lambda r: r["trial"])


if __name__ == "__main__":
    unittest.main()
