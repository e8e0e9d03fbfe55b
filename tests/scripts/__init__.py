"""Tests of the operator scripts under scripts/."""
