"""Pinch's payback knobs at the shipped defaults (the config schema's), with a test's changes."""

from dataclasses import replace

from pinch.payback import PaybackKnobs
from routing.config import PinchConfig
from routing.pruning import payback_knobs


def shipped_knobs(**changes) -> PaybackKnobs:
    return replace(payback_knobs(PinchConfig()), **changes)
