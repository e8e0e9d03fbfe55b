"""Arms: a stable share of conversations runs with other settings, to compare against.

A trade-off the router makes (what pinch hides from the agent, which model
answers on ``auto``) is judged by comparing conversations that had it with
conversations that did not, on the user's own traffic. An arm is config:
``pinch.holdout_share`` (pinch off) and the ``experiments`` list, each arm a
share of conversations with ``pinch.*`` keys and routing changes of its own.

Assignment is by the conversation's key (routing.prefix_probe.conversation_key),
hashed to a point in [0, 1): every turn of a conversation lands in the same
arm, in every worker and host, with nothing stored. The holdout takes the
first ``holdout_share`` of the line, the experiments the next slices in the
order written, and the rest is ``control``. Changing a share moves the
boundaries, so some conversations change arm from their next turn; each
decision records the arm it ran in (``RouteDecision.arm``), so the comparison
reads what happened, not what the config says now.

The holdout needs pinch on: with ``pinch.enabled`` false there is nothing to
hold out, and no conversation is put in it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from routing.config import RouterConfig
from routing.config.schema import ExperimentConfig, ExperimentRoutingConfig

CONTROL = "control"
HOLDOUT = "holdout"
# A point on the line from 8 bytes of the hash: 2**64 steps, far finer than any share.
_SCALE = float(2**64)
# The hash is salted so the arm line is independent of the key's other uses.
_SALT = b"router-arm:"


@dataclass(frozen=True)
class Arm:
    """The arm a conversation is in, and what it changes."""

    name: str = CONTROL
    experiment: ExperimentConfig | None = None

    @property
    def routing(self) -> ExperimentRoutingConfig:
        """What the arm changes in the auto model's choice (nothing for control and holdout)."""
        if self.experiment is None:
            return _NO_ROUTING_CHANGE
        return self.experiment.routing


_CONTROL = Arm()
_NO_ROUTING_CHANGE = ExperimentRoutingConfig()


def arm_point(conversation: str) -> float:
    """The conversation's place on the arm line, uniform in [0, 1), the same everywhere."""
    digest = hashlib.blake2b(_SALT + conversation.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / _SCALE


def assign_arm(config: RouterConfig, conversation: str | None) -> Arm:
    """The arm of ``conversation`` under ``config`` (control when there is no key)."""
    edge = config.pinch.holdout_share if config.pinch.enabled else 0.0
    if not conversation or (edge <= 0 and not config.experiments):
        return _CONTROL  # no arm but control: no point on the line to hash
    point = arm_point(conversation)
    if point < edge:
        return Arm(HOLDOUT)
    for experiment in config.experiments:
        edge += experiment.share
        if point < edge:
            return Arm(experiment.name, experiment)
    return _CONTROL


def arm_config(config: RouterConfig, arm: Arm) -> RouterConfig:
    """The config the arm's requests are planned with: its pinch block swapped in."""
    if arm.name == HOLDOUT:
        pinch = config.pinch.model_copy(update={"enabled": False})
    elif arm.experiment is not None and arm.experiment.pinch:
        pinch = config.arm_pinch(arm.experiment)
    else:
        return config
    return config.model_copy(update={"pinch": pinch})


def arm_names(config: RouterConfig) -> list[str]:
    """Every arm the config can assign, control first (the order the surfaces show them in)."""
    names = [CONTROL]
    if config.pinch.enabled and config.pinch.holdout_share > 0:
        names.append(HOLDOUT)
    names.extend(experiment.name for experiment in config.experiments)
    return names
