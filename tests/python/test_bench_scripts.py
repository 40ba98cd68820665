"""Tests of the analysis scripts under bench/ that read autotune's outputs."""
import csv
import os
import subprocess
import sys
import tempfile
import unittest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench")
COLUMNS = ["strategy", "seed", "trial", "status", "measured", "recommended_true", "fraction_of_optimum",
           "proposal_ms", "seconds", "elapsed_s", "raced", "trial_true", "config", "answer"]


def cfg(workers, prefetch, batch=64):
    return f"batch_size={batch} num_workers={workers} prefetch_factor={prefetch}"


class WhereTrialsGo(unittest.TestCase):
    def run_script(self, rows, *args, columns=COLUMNS):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "trials.csv"), "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(columns)
                for r in rows:
                    w.writerow(r)
            p = subprocess.run([sys.executable, os.path.join(BENCH, "where_trials_go.py"), d, *args],
                               capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr

    @staticmethod
    def row(seed, trial, config, answer, fraction, strategy="bo"):
        return [strategy, seed, trial, "ok", 1, 1, fraction, 0, 1, trial, 0, 1, config, answer]

    def test_counts_trials_per_run_and_final_answers_by_the_knobs_named(self):
        rows = [
            # run 7: two trials at (16, 8), one at (14, 8); its last answer is (14, 8)
            self.row(7, 1, cfg(16, 8), cfg(16, 8), 0.98),
            self.row(7, 2, cfg(16, 8, 128), cfg(16, 8), 0.98),
            self.row(7, 3, cfg(14, 8), cfg(14, 8), 1.0),
            # run 8: one trial at (16, 8), then the search stopped (no config) with its answer standing
            self.row(8, 1, cfg(16, 8), cfg(16, 8), 0.98),
            self.row(8, 2, cfg(16, 1), cfg(16, 8), 0.98),
            self.row(8, 3, "", cfg(16, 8), 0.98),
        ]
        rc, out, err = self.run_script(rows)
        self.assertEqual(rc, 0, err)
        lines = {l.split(")")[0].strip() + ")": l.split(")")[1].split() for l in out.splitlines() if l.strip().startswith("(")}
        # trials per run, answers, their median fraction
        self.assertEqual(lines["(16, 8)"], ["1.50", "1", "0.9800"])
        self.assertEqual(lines["(14, 8)"], ["0.50", "1", "1.0000"])
        self.assertEqual(lines["(16, 1)"], ["0.50", "0", "-"])
        self.assertIn("bo: 2 runs", out)

    def test_groups_by_other_knobs_and_per_trial(self):
        rows = [self.row(7, 1, cfg(16, 8, 128), cfg(16, 8, 128), 0.9), self.row(8, 1, cfg(2, 8, 128), cfg(2, 8, 128), 0.5)]
        rc, out, err = self.run_script(rows, "batch_size", "--by-trial")
        self.assertEqual(rc, 0, err)
        self.assertIn("(128)       1.00        2           0.7000", out)
        self.assertIn("1: 128: 2", out)

    def test_an_older_trials_csv_is_refused_with_a_reason(self):
        rc, out, err = self.run_script([], columns=COLUMNS[:-2])
        self.assertEqual(rc, 2)
        self.assertIn("no config column", err)


if __name__ == "__main__":
    unittest.main()
