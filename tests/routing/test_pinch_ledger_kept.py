"""Pinch's ledger kept parsed per conversation (routing/pruning.py, ``LedgerSlot``): the same
plans as parsing the store's text each request, and the same originals for the recall store.

A worker keeps the ledger it saved beside its JSON and takes it back while the
store still holds that JSON. Each corpus session is served request by request
(some sent twice, as a retry, some after a gap the cache does not outlive,
with the model's recalls now and then), once so and once with the kept
ledgers forgotten before every request: payloads, ledgers and every figure of
the outcome must come out alike. And what the recall store is given to keep
is every original past the last turn's stable prefix, as the handles name them.
"""

import json
import random
from functools import partial

import pytest

from pinch.recall import index_of
from routing import pruning
from routing.config import DEFAULT_CONFIG_PATH, validate_config
from routing.config.source import read_config_file
from routing.prefix_probe import PrefixProbe, carried_facts
from routing.pruning import LedgerSlot, pinch_messages
from routing.recall.store import restored
from routing.replay.corpus import corpus_dir
from tests.support.ci import missing
from tests.support.corpus import recorded_sessions


def requests(messages):
    return [messages[:t] for t, m in enumerate(messages) if t > 0 and m["role"] == "assistant"]


def served(recorded, config, forget: bool) -> list:
    """Each request's (payload, outcome figures), served in order through one store."""
    rng = random.Random(recorded.name)
    store, key, now = PrefixProbe(), recorded.name, 1000.0
    cache = config.cache_prices(config.models[0])
    seen = []
    for request in requests(recorded.messages):
        for again in range(1 + (rng.random() < 0.3)):
            now += 0.5 if again else rng.choice([5.0, 30.0, 900.0])
            if rng.random() < 0.1:  # a recall recorded: these results are sent whole
                results = [i for i, m in enumerate(request) if m["role"] == "tool"]
                raw = store.load_restored(key)
                if raw is not None and results:
                    chosen = ",".join(map(str, sorted(rng.sample(results, 1))))
                    store.save_restored(key, f"{raw.partition(':')[0]}:{chosen}")
            if forget:
                pruning._ledgers.clear()
            messages = json.loads(json.dumps(request))
            facts = carried_facts(messages, store.last_facts(key))
            recalled = partial(restored, store=store, recorded=lambda key: None)
            slot = LedgerSlot(store, key, lambda key: None, recalled=recalled)
            known = slot.load(messages) is not None
            sent, outcome = pinch_messages(
                messages, config.pinch, 100, cache=cache, slot=slot, now=now, facts=facts
            )
            store.keep_facts(key, facts)
            _, before = outcome.stable
            if known:
                assert outcome.to_store == {
                    handle: text
                    for handle, text in outcome.recallable.items()
                    if (index_of(handle) or 0) >= before
                }
            else:
                assert outcome.to_store == outcome.recallable
            seen.append((json.dumps(sent), outcome))
    return seen


@pytest.mark.parametrize("recorded", recorded_sessions())
def test_a_kept_ledger_plans_as_the_stored_text_parsed_each_request_does(recorded):
    if recorded is None:
        missing(f"the shared corpus at {corpus_dir()} (set CORPUS_DIR)")
    config = validate_config(read_config_file(DEFAULT_CONFIG_PATH))
    assert served(recorded, config, forget=False) == served(recorded, config, forget=True)


def test_a_ledger_another_worker_saved_since_is_read_from_the_store():
    store, key = PrefixProbe(), "conversation"
    slot = LedgerSlot(store, key)
    messages = [{"role": "user", "content": "go"}]
    mine = pruning.Ledger(length=1, decided=0, at=5.0)
    slot.save(mine)
    assert slot.load(messages) == mine
    theirs = pruning.Ledger(length=1, decided=0, at=7.0, earned=3.0)
    store.save_ledger(key, theirs.as_json())
    assert slot.load(messages) == theirs
