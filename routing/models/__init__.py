"""What the router stores, one module per record: its keys, its decision log, its
conversations, the summary tables the surfaces read, the admin's config
changes, stored Responses answers, the limits' refusal counters and budget ledgers,
and the recall store's originals.

Everything is importable from ``routing.models``, which is also where Django
looks for the app's models.
"""

from routing.models.budgets import BudgetLedger
from routing.models.config import ConfigOverride, RegisteredModel
from routing.models.conversation import Conversation
from routing.models.decisions import (
    BILLED,
    NET_SAVED,
    PINCH_MEASURED,
    PRUNED,
    RECENT_DECISIONS,
    SESSION_ROLE_CHOICES,
    TOKENS_SAVED,
    AgentSession,
    RouteDecision,
    RouteDecisionQuerySet,
    tokens_saved,
)
from routing.models.keys import (
    BUDGET_PERIODS,
    KEY_PREFIX,
    PERIOD_DAY,
    PERIOD_MONTH,
    PERIOD_WEEK,
    ApiKey,
    ApiKeyQuerySet,
    hash_key,
)
from routing.models.recall import RecallOriginal, RecallUsage
from routing.models.refusals import LimitRefusal
from routing.models.responses import StoredResponse
from routing.models.summaries import (
    ArmHour,
    CompressedTools,
    DecisionSummary,
    KeySpend,
    QualityUnit,
    SavedTokens,
)

__all__ = [
    "BILLED",
    "BUDGET_PERIODS",
    "KEY_PREFIX",
    "NET_SAVED",
    "PERIOD_DAY",
    "PERIOD_MONTH",
    "PERIOD_WEEK",
    "PINCH_MEASURED",
    "PRUNED",
    "RECENT_DECISIONS",
    "SESSION_ROLE_CHOICES",
    "TOKENS_SAVED",
    "AgentSession",
    "ApiKey",
    "ApiKeyQuerySet",
    "ArmHour",
    "BudgetLedger",
    "CompressedTools",
    "ConfigOverride",
    "Conversation",
    "DecisionSummary",
    "KeySpend",
    "LimitRefusal",
    "QualityUnit",
    "RecallOriginal",
    "RecallUsage",
    "RegisteredModel",
    "RouteDecision",
    "RouteDecisionQuerySet",
    "SavedTokens",
    "StoredResponse",
    "hash_key",
    "tokens_saved",
]
