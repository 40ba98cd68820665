"""The helper inside real autotune runs (AUTOTUNE_BINARY, which ctest sets):
data-parallel ranks, warm trials, the import with no install step, the
start-up, a job that hangs after its measurement, racing."""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

from trial_common import require_torch


def meter_job(before="", after="", meter="warmup_s=0.1, window_s=0.05, max_s=0.6"):
    """A job.py that measures a trivial loop with autotune_trial's meter, with
    the lines `before` and `after` around it."""
    return (f"{before}\nimport autotune_trial, time\n"
            "p = autotune_trial.params(batch_size=4)\n"
            f"with autotune_trial.Meter(p, {meter}) as m:\n"
            "    for b in m.batches(iter(lambda: [0] * p.batch_size, None)):\n"
            "        time.sleep(0.001)\n"
            f"{after}\n")


def tune_in(folder, job, space, timeout=180, command=None, workload_extra=""):
    """Writes job.py and space.yaml into `folder`, runs autotune there (the
    helper must come from the trial's own PYTHONPATH) and returns the process.
    `command`: the workload's command line (default: python job.py);
    `workload_extra`: more workload options (", exit_grace: 1s")."""
    with open(os.path.join(folder, "job.py"), "w") as f:
        f.write(textwrap.dedent(job))
    command = command or f"{sys.executable} job.py"
    with open(os.path.join(folder, "space.yaml"), "w") as f:
        f.write(f"workload: {{kind: command, command: '{command}', timeout: 60s{workload_extra}}}\n" + space)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([os.environ["AUTOTUNE_BINARY"], "--config", "space.yaml"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=timeout)


class ThroughAutotune(unittest.TestCase):
    @require_torch
    def test_a_two_rank_ddp_job_from_a_shell_line_ends_every_rank_at_the_same_step(self):
        # Two data-parallel ranks (gloo) started by a shell line, as torchrun
        # does. Rank 1's own rule would run to 2 s, rank 0's ends at 1 s: a rank
        # that leaves the loop alone leaves the other blocked in the gradients'
        # all-reduce ("Connection closed by peer", or a hang under NCCL).
        if not os.environ.get("AUTOTUNE_BINARY"):
            self.skipTest("AUTOTUNE_BINARY not set (ctest sets it)")
        import socket
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        ranks = " ".join(f"RANK={r} WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT={port} "
                         f"{sys.executable} job.py"
                         f" & r{r}=$!;" for r in (0, 1))
        with tempfile.TemporaryDirectory() as d:
            p = tune_in(d, """
                    import time, torch, torch.distributed as dist
                    import autotune_trial
                    p = autotune_trial.params(batch_size=16)
                    dist.init_process_group("gloo")
                    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(32, 4))
                    opt = torch.optim.SGD(model.parameters(), lr=0.01)
                    def batches():
                        while True:
                            yield torch.randn(p.batch_size, 32)
                    cap = 1.0 if dist.get_rank() == 0 else 2.0
                    with autotune_trial.Meter(p, warmup_s=0.2, max_s=cap, target_ci90=1e-9) as m:
                        for i, x in enumerate(m.batches(batches())):
                            if p.batch_size > 16 and dist.get_rank() == 1 and i == 20:
                                raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
                            time.sleep(0.002)
                            loss = model(x).sum()
                            opt.zero_grad()
                            loss.backward()
                            opt.step()
                    dist.destroy_process_group()
                """, "space:\n  batch_size: [16, 32]\nsearch: {strategy: grid}\n", timeout=120,
                command=ranks + " wait $r0; a=$?; wait $r1; b=$?; echo ranks exited $a $b >&2; exit $((a | b))")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(os.path.join(d, "tuned.journal.jsonl")) as f:
                finished = [json.loads(line) for line in f if '"finish"' in line and '"control":true' not in line]
            # Batch 32: rank 1 runs out of memory at step 20. The trial is an
            # `oom`, and that rank exits non-zero (a launcher then stops the rest).
            self.assertEqual([t["status"] for t in finished], ["ok", "oom"], finished)
            self.assertIn("CUDA out of memory", finished[1]["reason"])
            with open(os.path.join(d, "tuned.journal.trials", "trial-2", "stderr.txt")) as f:
                exits = [line.split()[2:] for line in f if line.startswith("ranks exited")]
            self.assertEqual(len(exits), 1)
            self.assertNotEqual(exits[0][1], "0", "the rank out of memory exits non-zero")
            finished = finished[:1]
            m = finished[0]["metrics"]
            self.assertEqual(m["world_size"], 2, m)
            self.assertAlmostEqual(finished[0]["throughput"], 2 * m["throughput_per_rank"], delta=1e-6)
            # The job moves at its slowest rank's pace; each rank's is kept.
            self.assertAlmostEqual(m["throughput_per_rank"], min(m["rank0_pace"], m["rank1_pace"]), delta=1e-6)
            self.assertLess(m["measure_seconds"], 1.5, "rank 0 wrote it (rank 1's own rule runs to 2 s)")
            # Both ranks' process trees, summed (alike: they run the same code).
            self.assertAlmostEqual(m["ram_bytes"] / m["ram_bytes_per_rank"], 2, delta=0.2)

    @require_torch
    def test_twenty_warm_trials_with_real_dataloaders_leave_no_worker_behind(self):
        # One warm worker runs 20 trials of a real DataLoader with 0-2 worker
        # processes (persistent, as jobs set them): each trial's loader
        # workers are gone before the next trial starts (the next trial's
        # memory and CPUs are its own), none outlives the run, and the
        # trials share one process.
        if not os.environ.get("AUTOTUNE_BINARY"):
            self.skipTest("AUTOTUNE_BINARY not set (ctest sets it)")
        with tempfile.TemporaryDirectory() as d:
            p = tune_in(d, """
                    import os, torch
                    from torch.utils.data import DataLoader, Dataset
                    import autotune_trial

                    class Ds(Dataset):
                        def __len__(self):
                            return 4096
                        def __getitem__(self, i):
                            return torch.full((16,), float(i))

                    def children():
                        out = []
                        for name in os.listdir("/proc"):
                            if name.isdigit():
                                try:
                                    with open(f"/proc/{name}/stat") as f:
                                        if int(f.read().rsplit(")", 1)[1].split()[1]) == os.getpid():
                                            out.append(int(name))
                                except OSError:
                                    pass
                        return out

                    for p in autotune_trial.trials(batch_size=8, num_workers=0):
                        with open("pids.txt", "a") as f:
                            f.write(f"{os.environ['AUTOTUNE_TRIAL']} {os.getpid()} {len(children())}\\n")
                        kw = dict(persistent_workers=True, prefetch_factor=2) if p.num_workers else {}
                        loader = DataLoader(Ds(), batch_size=p.batch_size, num_workers=p.num_workers, **kw)
                        with autotune_trial.Meter(p, warmup_s=0.05, max_s=0.4) as m:
                            for x in m.batches(loader):
                                pass
                """, "space:\n  batch_size: [8, 16, 32, 64, 128, 256, 512]\n  num_workers: [0, 1, 2]\n"
                     "search: {strategy: grid, budget: 20}\n", workload_extra=", warm: true")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(os.path.join(d, "tuned.journal.jsonl")) as f:
                finished = [json.loads(line) for line in f if '"finish"' in line and '"control":true' not in line]
            self.assertEqual(len(finished), 20)
            self.assertEqual({t["status"] for t in finished}, {"ok"}, finished)
            with open(os.path.join(d, "tuned.journal.jsonl")) as f:
                controls = sum('"finish"' in line and '"control":true' in line for line in f)
            with open(os.path.join(d, "pids.txt")) as f:
                rows = [line.split() for line in f]
            self.assertEqual(len(rows), 20 + controls)  # drift control's re-measurements run in the worker too
            self.assertEqual(len({pid for _, pid, _ in rows}), 1, rows)
            self.assertEqual({n for _, _, n in rows}, {"0"}, "a trial began with an earlier trial's workers alive")
            left = subprocess.run(["pgrep", "-f", os.path.join(d, "job.py")], capture_output=True, text=True)
            self.assertEqual(left.stdout.strip(), "", "processes left behind")
            self.assertIn(f"1 warm worker for {20 + controls} trials", p.stdout)

    def test_each_warm_trial_starts_from_the_environment_the_process_started_with(self):
        # transformers writes ACCELERATE_MIXED_PRECISION=bf16 into the
        # environment during a bf16 trial; kept, accelerate would run the next
        # trial's fp32 in bf16. Each trial here adds, changes and removes a
        # variable and records what it found first.
        if not os.environ.get("AUTOTUNE_BINARY"):
            self.skipTest("AUTOTUNE_BINARY not set (ctest sets it)")
        with tempfile.TemporaryDirectory() as d:
            p = tune_in(d, """
                    import json, os
                    import autotune_trial

                    os.environ["JOB_KEPT"] = "from the script"
                    os.environ["JOB_CHANGED"] = "before"
                    for p in autotune_trial.trials(batch_size=8):
                        seen = {k: os.environ.get(k) for k in ("JOB_ADDED", "JOB_CHANGED", "JOB_KEPT")}
                        with open("seen.jsonl", "a") as f:
                            f.write(json.dumps({"pid": os.getpid(), "trial": os.environ["AUTOTUNE_TRIAL"],
                                                "seen": seen}) + "\\n")
                        os.environ["JOB_ADDED"] = "by trial " + os.environ["AUTOTUNE_TRIAL"]
                        os.environ["JOB_CHANGED"] = "after"
                        del os.environ["JOB_KEPT"]
                        with autotune_trial.Meter(p, warmup_s=0.05, max_s=0.3) as m:
                            for _ in m.batches(iter(range(10**9))):
                                pass
                """, "space:\n  batch_size: [8, 16, 32]\nsearch: {strategy: grid}\n", workload_extra=", warm: true")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(os.path.join(d, "tuned.journal.jsonl")) as f:
                finished = [json.loads(line) for line in f if '"finish"' in line and '"control":true' not in line]
            self.assertEqual([t["status"] for t in finished], ["ok"] * 3, finished)
            with open(os.path.join(d, "seen.jsonl")) as f:
                rows = [json.loads(line) for line in f]
            # A drift control (a load that changed mid-run, as under ctest -j2) runs in the worker too.
            searched = {str(t["trial"]) for t in finished}
            self.assertEqual([r["trial"] for r in rows if r["trial"] in searched], ["1", "2", "3"])
            self.assertEqual(len({r["pid"] for r in rows}), 1, "the trials share one process")
            for r in rows:
                self.assertEqual(r["seen"], {"JOB_ADDED": None, "JOB_CHANGED": "before", "JOB_KEPT": "from the script"})

    def test_a_command_trial_imports_the_helper_with_no_install_step(self):
        if not os.environ.get("AUTOTUNE_BINARY"):
            self.skipTest("AUTOTUNE_BINARY not set (ctest sets it)")
        with tempfile.TemporaryDirectory() as d:
            p = tune_in(d, meter_job(meter="warmup_s=0.1, max_s=1"),
                        "space:\n  batch_size: [4, 8]\nsearch: {strategy: grid}\n", timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(os.path.join(d, "tuned.journal.jsonl")) as f:
                finished = [json.loads(line) for line in f if '"finish"' in line and '"control":true' not in line]
            self.assertEqual([t["status"] for t in finished], ["ok", "ok"], finished)
            for t in finished:
                self.assertIn("data_wait_fraction", t["metrics"])


    def test_the_start_up_before_the_first_step_is_counted_from_the_trials_start(self):
        # What a GPU job spends before its first step (a launcher, `import torch`:
        # 5-6 s on an H100 machine, CUDA's start, the workers) is its own part
        # of the minutes, not "other": from the trial's start (the shell's, here
        # a compound command that sleeps 0.3 s before Python) to the first mark.
        if not os.environ.get("AUTOTUNE_BINARY"):
            self.skipTest("AUTOTUNE_BINARY not set (ctest sets it)")
        with tempfile.TemporaryDirectory() as d:
            p = tune_in(d, meter_job(before="import time\ntime.sleep(0.5)  # a slow import"),
                        "space:\n  batch_size: [4, 8]\nsearch: {strategy: grid}\n",
                        command=f"sleep 0.3 && {sys.executable} job.py")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(os.path.join(d, "tuned.journal.jsonl")) as f:
                finished = [json.loads(line) for line in f if '"finish"' in line and '"control":true' not in line]
            self.assertEqual([t["status"] for t in finished], ["ok", "ok"], finished)
            for t in finished:
                m = t["metrics"]
                self.assertGreaterEqual(m["startup_seconds"], 0.8, "the shell's sleep and the import")
                self.assertLessEqual(m["startup_seconds"] + m["measure_seconds"], t["seconds"] + 0.05, t)
            with open(os.path.join(d, "tuned.yaml")) as f:
                time_line = next(line for line in f if line.strip().startswith("time:"))
            self.assertGreaterEqual(float(time_line.split("startup_s:")[1].split(",")[0]), 1.6, time_line)
            self.assertIn("time:   start-up ", p.stdout)

    def test_a_job_that_hangs_after_its_measurement_is_stopped_and_its_result_kept(self):
        # Measured, then stuck at exit: a non-daemon thread that never ends
        # holds the interpreter as NCCL's teardown or a logger's flush can.
        # The helper has written the result; the tuner stops the job
        # `exit_grace` later and keeps what it measured, not the 60 s timeout.
        if not os.environ.get("AUTOTUNE_BINARY"):
            self.skipTest("AUTOTUNE_BINARY not set (ctest sets it)")
        with tempfile.TemporaryDirectory() as d:
            p = tune_in(d, meter_job(after="import threading\nthreading.Thread(target=time.sleep, args=(1000,)).start()"),
                        "space:\n  batch_size: [4, 8]\nsearch: {strategy: grid}\n", workload_extra=", exit_grace: 1s")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(os.path.join(d, "tuned.journal.jsonl")) as f:
                finished = [json.loads(line) for line in f if '"finish"' in line and '"control":true' not in line]
            self.assertEqual([t["status"] for t in finished], ["ok", "ok"], finished)
            for t in finished:
                self.assertEqual(t["metrics"].get("stopped_after_result"), 1, t)
                self.assertGreater(t["throughput"], 0)
                self.assertLess(t["seconds"], 15, "stopped a second after its result, not at the 60 s timeout")
            self.assertIn("did not exit: stopped, result kept", p.stdout + p.stderr)

    def test_racing_through_autotune_a_job_that_honours_the_bar_and_one_that_ignores_it(self):
        if not os.environ.get("AUTOTUNE_BINARY"):
            self.skipTest("AUTOTUNE_BINARY not set (ctest sets it)")
        with tempfile.TemporaryDirectory() as d:
            p = tune_in(d, """
                    import autotune_trial, json, os, time
                    p = autotune_trial.params(mode="meter", delay_ms=1)
                    def loader():
                        while True:
                            time.sleep(p.delay_ms / 1000)
                            yield [0] * 4
                    if p.mode == "meter":  # honours AUTOTUNE_STOP_BELOW
                        with autotune_trial.Meter(batch_size=4, warmup_s=0.2, window_s=0.1, max_s=4) as m:
                            for b in m.batches(loader()):
                                pass
                    else:  # its own measurement, whatever the bar
                        it, t0 = loader(), time.perf_counter()
                        for _ in range(60):
                            next(it)
                        print(json.dumps({"throughput": 240 / (time.perf_counter() - t0)}))
                """, "space:\n  mode: [meter, own]\n  delay_ms: [1, 20]\n"
                     "search: {strategy: grid, initial: [{mode: meter, delay_ms: 1}]}\n")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(os.path.join(d, "tuned.journal.jsonl")) as f:
                finished = {(t["config"]["mode"], t["config"]["delay_ms"]): t
                            for t in map(json.loads, f) if t["type"] == "finish" and not t.get("control")}
            self.assertEqual(len(finished), 4, finished)
            for t in finished.values():
                self.assertEqual(t["status"], "ok", t)
            self.assertEqual(finished[("meter", 20)]["metrics"].get("raced"), 1, "20x slower than the incumbent")
            self.assertNotIn("raced", finished[("meter", 1)]["metrics"], "the first trial has no bar")
            self.assertNotIn("raced", finished[("own", 20)]["metrics"], "a job that ignores the bar runs in full")
            with open(os.path.join(d, "tuned.yaml")) as f:
                tuned = f.read()
            self.assertIn("delay_ms: 1", tuned)
            self.assertIn("raced: 1", tuned)


if __name__ == "__main__":
    unittest.main()
