"""The runtime knobs: the three switches admin can flip without a restart.

One list, read by the admin controls page, the snapshot and the dashboard, so
every surface names and reads the same switches the same way.
"""

from functools import reduce


class Knob:
    def __init__(self, name, key, label, help_text, measurement_only=False):
        self.name = name  # the snapshot's knob name
        self.key = key  # the dotted config key it persists as
        self.label = label
        self.help_text = help_text
        self.measurement_only = measurement_only

    def value(self, config):
        return reduce(getattr, self.key.split("."), config)


KNOBS = [
    Knob(
        "pinch_enabled",
        "pinch.enabled",
        "Pinch enabled",
        "Prune old tool results before any paid token is sent. Off: the payload is the "
        "caller's messages, byte for byte.",
    ),
    Knob(
        "pinch_relevance_enabled",
        "pinch.relevance.enabled",
        "Relevance ordering",
        "Compress the least relevant tool results first and stop once under budget. Off: "
        "uniform pruning. Needs pinch enabled.",
    ),
    Knob(
        "pinch_prefix_probe",
        "pinch.prefix_probe",
        "Prefix probe",
        "Record how much of the previous turn's payload prefix this turn kept (three integers "
        "per decision).",
        measurement_only=True,
    ),
]
KNOB_KEYS = {knob.key for knob in KNOBS}
MEASUREMENT_ONLY_KEYS = {knob.key for knob in KNOBS if knob.measurement_only}
MEASUREMENT_ONLY_NOTE = "Measurement only: routing and the payload sent are unchanged."


def knob_values(config) -> dict:
    """{knob name: its value in the effective config}, as the snapshot and dashboard show them."""
    return {knob.name: knob.value(config) for knob in KNOBS}
