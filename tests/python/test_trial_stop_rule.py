"""The stopping rule's functions against the vectors that the harness's
tests read too (tests/support/stop_rule_vectors.json)."""
import json
import os
import unittest

from trial_common import autotune_trial


class StopRuleVectors(unittest.TestCase):
    """The stopping rule's vectors that the harness's tests read too
    (tests/support/stop_rule_vectors.json, measure_test.cpp): one rule."""

    @classmethod
    def setUpClass(cls):
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support",
                               "stop_rule_vectors.json")) as f:
            cls.v = json.load(f)

    def test_student_t95(self):
        for dof, t in self.v["student_t95"]:
            self.assertEqual(autotune_trial._t95(dof), t, dof)

    def test_drifting_surely_below_and_spread_settled(self):
        for c in self.v["drifting"]:
            self.assertEqual(autotune_trial.drifting(c["rates"]), c["expect"], c)
        for c in self.v["surely_below"]:
            self.assertEqual(autotune_trial.surely_below(c["rates"], c["bar"]), c["expect"], c)
        for c in self.v["spread_settled"]:
            self.assertEqual(autotune_trial.spread_settled(c["rates"], c["target_rsd"], 5, c["fewest_windows"]),
                             c["expect"], c)

    def test_the_stop_on_precision(self):
        for c in self.v["counted_from"]:
            self.assertEqual(autotune_trial.counted_from(c["rates"], c["rsd_windows"]), c["expect"], c)
        for c in self.v["ci90"]:
            self.assertAlmostEqual(autotune_trial.ci90(c["rates"]), c["expect"], places=9, msg=c)
        for c in self.v["precise_enough"]:
            self.assertEqual(autotune_trial.precise_enough(c["rates"], c["target_ci90"], 5, c["fewest_windows"]),
                             c["expect"], c)


if __name__ == "__main__":
    unittest.main()
