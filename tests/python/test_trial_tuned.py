"""tuned(): the answer read back from tuned.yaml by the script itself, with
the standard library only. What autotune's emitter writes for every value
that YAML would type otherwise is read back by tests/tuner/record/
tuned_yaml_test.cpp (TheHelpersReaderReadsEveryAnswerAsWritten); here, the
rest of the contract: the defaults, a trial's values, typing, hand-edited
files and their errors."""
import contextlib
import io
import os
import tempfile
import textwrap
import unittest

from trial_common import autotune_trial, require_torch, torch

from autotune_trial import _params

# As the emitter writes it (tuned.yaml's head and its first keys).
TUNED = """# autotune: the fastest feasible configuration measured
best: {batch_size: 128, num_workers: 2, pin_memory: true, precision: bf16, grad_accum: 2, "on": "yes"}
metrics: {throughput: 1234.5}
baseline:
  config: {batch_size: 32, num_workers: 0, pin_memory: false, precision: fp32, grad_accum: 8, "on": "no"}
"""
DEFAULTS = dict(batch_size=32, num_workers=0, pin_memory=False, precision="fp32", grad_accum=8)


class Tuned(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "tuned.yaml")
        self.saved_env = dict(os.environ)
        for k in [k for k in os.environ if k.startswith("AUTOTUNE_")]:
            del os.environ[k]
        self.saved_given, self.saved_warned = set(_params._GIVEN), set(_params._WARNED)
        _params._GIVEN.clear()
        _params._WARNED.clear()

    def tearDown(self):
        self.dir.cleanup()
        os.environ.clear()
        os.environ.update(self.saved_env)
        _params._GIVEN.clear()
        _params._GIVEN.update(self.saved_given)
        _params._WARNED.clear()
        _params._WARNED.update(self.saved_warned)

    def write(self, text):
        with open(self.path, "w") as f:
            f.write(textwrap.dedent(text))

    def tuned(self, **defaults):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            p = autotune_trial.tuned(self.path, **defaults)
        return p, err.getvalue()

    def test_the_defaults_without_a_file_and_the_answer_with_one(self):
        p, err = self.tuned(**DEFAULTS)
        self.assertEqual(p, DEFAULTS)
        self.assertIsInstance(p, autotune_trial.Params)
        self.assertEqual(err, "")
        self.write(TUNED)
        p, err = self.tuned(**DEFAULTS, on="no")
        self.assertEqual(p, dict(batch_size=128, num_workers=2, pin_memory=True, precision="bf16", grad_accum=2,
                                 on="yes"))
        self.assertIs(p.pin_memory, True)
        self.assertEqual(err, "")
        self.assertFalse(p.tuning)

    def test_inside_a_trial_the_trials_values_and_not_the_file(self):
        self.write(TUNED)
        os.environ.update(AUTOTUNE_TRIAL="3", AUTOTUNE_BATCH_SIZE="64", AUTOTUNE_PIN_MEMORY="false")
        p, _ = self.tuned(**DEFAULTS)
        self.assertEqual(p, dict(DEFAULTS, batch_size=64), "the space's knobs from the trial, the rest defaults")
        self.assertTrue(p.tuning)

    def test_a_knob_without_a_default_is_kept_and_said_once(self):
        self.write(TUNED)
        p, err = self.tuned(batch_size=32, num_workers=0)
        self.assertEqual(p.precision, "bf16")
        self.assertEqual(p["on"], "yes")
        self.assertIn("sets precision", err)
        _, again = self.tuned(batch_size=32, num_workers=0)
        self.assertEqual(again, "", "once a knob")

    @require_torch
    def test_threads_are_applied_as_the_trials_applied_them(self):
        # torch.set_num_threads and OMP_NUM_THREADS, with or without a
        # default, and no word of a knob the script never reads.
        before = torch.get_num_threads()
        self.addCleanup(torch.set_num_threads, before)
        want = 1 if before != 1 else 2
        self.write(f"best: {{batch_size: 64, threads: {want}}}\n")
        for defaults in (dict(batch_size=32), dict(batch_size=32, threads=before)):
            with self.subTest(defaults=defaults):
                torch.set_num_threads(before)
                os.environ.pop("OMP_NUM_THREADS", None)
                p, err = self.tuned(**defaults)
                self.assertEqual(p, dict(batch_size=64, threads=want))
                self.assertEqual(torch.get_num_threads(), want)
                self.assertEqual(os.environ.get("OMP_NUM_THREADS"), str(want))
                self.assertEqual(err, "")

    def test_a_misspelt_knob_in_the_file_suggests_the_default_it_missed(self):
        self.write("best: {num_wokers: 4}\n")
        p, err = self.tuned(num_workers=0)
        self.assertEqual(p, {"num_workers": 0, "num_wokers": 4})
        self.assertIn("did you mean num_workers?", err)

    def test_values_typed_like_the_defaults(self):
        self.write('best: {lr: 1, workers: "3", flag: "on", name: 7}\n')
        p, _ = self.tuned(lr=0.5, workers=0, flag=False, name="x")
        self.assertEqual(p, {"lr": 1.0, "workers": 3, "flag": True, "name": "7"})
        self.assertIs(type(p.lr), float)
        self.write("best: {batch_size: big}\n")
        with self.assertRaisesRegex(ValueError, r"tuned\.yaml: best\.batch_size is 'big'"):
            self.tuned(batch_size=32)

    def test_a_run_without_an_answer_gives_the_defaults_and_says_so(self):
        self.write("# autotune\nbest: ~\nmetrics: ~\n")
        p, err = self.tuned(**DEFAULTS)
        self.assertEqual(p, DEFAULTS)
        self.assertIn("no answer", err)

    def test_hand_edited_block_maps_comments_and_quotes(self):
        self.write("""\
            # edited by hand
            best:
              batch_size: 256   # was 128
              precision: 'bf16'
              'it''s': "a \\"b\\"\\t\\u00e9"
              pin_memory: false
            metrics: {throughput: 1.0}
            """)
        p, _ = self.tuned(batch_size=32, precision="fp32", pin_memory=True)
        self.assertEqual(p, {"batch_size": 256, "precision": "bf16", "pin_memory": False, "it's": 'a "b"\t\u00e9'})
        self.write("best: {batch_size: 64,\n  grad_accum: 4}  # a flow map over two lines\nmetrics: ~\n")
        p, _ = self.tuned(batch_size=32, grad_accum=1)
        self.assertEqual(p, {"batch_size": 64, "grad_accum": 4})

    def test_what_it_cannot_read_names_the_file_and_line(self):
        for text, where in (("a: 1\nbest: {batch_size: 64\n", ":2:"), ("best: [1, 2]\n", ":1:"),
                            ("best: {a: [1]}\n", ":1:"), ("best:\n  a: 1\n    b: 2\n", ":3:")):
            self.write(text)
            with self.assertRaises(ValueError) as e:
                self.tuned(batch_size=32)
            self.assertIn("tuned.yaml" + where, str(e.exception), text)
        self.write("metrics: {throughput: 1}\n")
        with self.assertRaisesRegex(ValueError, "no top-level `best:`"):
            self.tuned(batch_size=32)


if __name__ == "__main__":
    unittest.main()
