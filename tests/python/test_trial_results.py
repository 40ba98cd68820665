"""The result a trial writes: atomically where autotune reads it, a summary
by hand, CUDA out of memory as a status, other exceptions still failing."""
import json
import os
import tempfile
import unittest

from trial_common import require_torch, run_script


class Results(unittest.TestCase):
    def test_written_atomically_where_autotune_reads_it_and_printed(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "result.json")
            p = run_script("""
                import autotune_trial, time
                with autotune_trial.Meter(batch_size=2, warmup_s=0.05, max_s=1) as m:
                    for b in m.batches(iter(lambda: [1, 2], None)):
                        time.sleep(0.001)
            """, env={"AUTOTUNE_RESULT": out, "AUTOTUNE_TRIAL": "1"})
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out) as f:
                written = json.load(f)
            printed = json.loads(p.stdout.strip().splitlines()[-1])
            self.assertEqual(written, printed)
            self.assertNotIn("startup_seconds", written, "no AUTOTUNE_TRIAL_START, no start-up")
            self.assertGreater(written["throughput"], 0)
            self.assertIn("data_wait_fraction", written)
            self.assertEqual(os.listdir(d), ["result.json"], "no temp file left")
            self.assertEqual(p.stderr, "", "under autotune, no summary")

    def test_by_hand_a_readable_summary(self):
        p = run_script("""
            import autotune_trial, time
            with autotune_trial.Meter(batch_size=2, warmup_s=0.05, max_s=1) as m:
                for b in m.batches(iter(lambda: [1, 2], None)):
                    time.sleep(0.001)
        """)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("samples/s", p.stderr)
        self.assertIn("waiting for data", p.stderr)

    @require_torch
    def test_cuda_out_of_memory_is_a_status_not_a_traceback(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "result.json")
            p = run_script("""
                import autotune_trial, torch
                with autotune_trial.Meter(batch_size=2):
                    raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
            """, env={"AUTOTUNE_RESULT": out, "AUTOTUNE_TRIAL": "1"})
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out) as f:
                r = json.load(f)
            self.assertEqual(r["status"], "oom")
            self.assertIn("Tried to allocate", r["reason"])
            self.assertNotIn("Traceback", p.stderr)

    def test_other_exceptions_still_fail_the_script(self):
        p = run_script("""
            import autotune_trial
            with autotune_trial.Meter(batch_size=2):
                raise ValueError("a bug")
        """, env={"AUTOTUNE_TRIAL": "1"})
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("ValueError: a bug", p.stderr)


if __name__ == "__main__":
    unittest.main()
