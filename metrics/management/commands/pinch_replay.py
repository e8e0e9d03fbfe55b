"""pinch_replay PATH...: what pinch would save on recorded agent sessions (routing.replay)."""

from contextlib import ExitStack
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from metrics.replay import (
    cli_overrides,
    describe_errors,
    describe_settings,
    payload_writer,
    render_table,
    replay_config,
    verdict,
    write_json_lines,
)
from metrics.replay_quality import render_quality_table
from routing.replay.corpus import MAX_FILE_BYTES, CorpusError, load_sessions
from routing.replay.price_list import with_listed_model
from routing.replay.prices import CONFIGURED, Prices, describe_configured_prices
from routing.replay.quality import replay_quality
from routing.replay.sessions import PRICE_MODELS, CachePrices, ReplayError, replay, replay_model

BAR_WIDTH = 40
# Where Claude Code and Codex CLI keep their session logs unless told otherwise.
DEFAULT_LOG_FOLDERS = ("~/.claude/projects", "~/.codex/sessions")


def _add_switch(parser, name: str, on: str, off: str) -> None:
    """``--name`` / ``--no-name``, not both; neither leaves ``name`` None (the config decides)."""
    group = parser.add_mutually_exclusive_group()
    for flag, value, text in ((f"--{name}", True, on), (f"--no-{name}", False, off)):
        group.add_argument(flag, dest=name, action="store_const", const=value, help=text)


class Command(BaseCommand):
    help = (
        "Replay agent sessions (corpus-format JSON files, Claude Code or Codex CLI session logs, "
        "or directories of them) turn by turn "
        "through the router's planning path, with no upstream call and no database write, and "
        "print what pinch saves per session. Settings: the router's config and admin overrides, "
        "with the options below on top."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "paths",
            nargs="*",
            metavar="PATH",
            help=(
                "a conversation file (*.json) or an agent's session log (*.jsonl: Claude "
                "Code's or Codex CLI's), or a directory of them; none: the logs Claude Code "
                f"and Codex CLI keep by default ({', '.join(DEFAULT_LOG_FOLDERS)})"
            ),
        )
        parser.add_argument(
            "--table",
            action="store_true",
            help="after the verdict, the table per session (or family) and the quality table",
        )
        parser.add_argument(
            "--json",
            dest="json_out",
            metavar="OUT",
            help="write one JSON object per request to OUT (one per line)",
        )
        parser.add_argument(
            "--payloads",
            metavar="FILE",
            help="write every request's payload as it would be sent to FILE, one JSON line "
            "each (conversation, turn, price_model, messages, tools), for every price model run",
        )
        parser.add_argument("--budget-tokens", metavar="N", help="pinch.budget_tokens")
        parser.add_argument("--keep-last-turns", metavar="N", help="pinch.keep_last_turns")
        parser.add_argument(
            "--keep-last-tool-results",
            metavar="N|none",
            help="pinch.keep_last_tool_results; none = user turns only (6krrt)",
        )
        parser.add_argument(
            "--window-step",
            metavar="N|none",
            help="pinch.window_step; the protected window advances N tool results at once "
            "(none = one at a time)",
        )
        _add_switch(
            parser,
            "relevance",
            on="pinch.relevance.enabled = true (least relevant first)",
            off="pinch.relevance.enabled = false (uniform pruning)",
        )
        _add_switch(
            parser,
            "payback",
            on="pinch.payback.enabled = true (prune in steps that pay back under the cache)",
            off="pinch.payback.enabled = false (prune to the budget on every request)",
        )
        parser.add_argument("--no-pinch", action="store_true", help="pinch.enabled = false")
        parser.add_argument(
            "--max-file-mb",
            type=int,
            default=MAX_FILE_BYTES // 2**20,
            metavar="MB",
            help="a file larger than this is skipped, unread (default: %(default)s)",
        )
        parser.add_argument(
            "--set",
            dest="config_sets",
            action="append",
            metavar="KEY=VALUE",
            help="any config key, e.g. --set pinch.payback.min_payback=2 (repeatable)",
        )
        parser.add_argument(
            "--tools-tokens",
            type=int,
            default=0,
            metavar="N",
            help="add a tool definition of about N tokens to every request (the corpus has none; "
            "Claude Code sends ~21k)",
        )
        parser.add_argument(
            "--no-cold-gaps",
            action="store_true",
            help="ignore the sessions' assistant_times: every request follows the previous one "
            "while the cache is warm",
        )
        parser.add_argument(
            "--by-family",
            action="store_true",
            help="one row per agent family (meta.agent) instead of one per session",
        )
        parser.add_argument(
            "--model",
            help="the requested model (default: the auto model): one of the config's, or a "
            "well-known model of the built-in price list (claude-sonnet-4-5, gpt-5, ...), "
            "replayed at its list prices",
        )
        defaults = CachePrices()
        # Unset: each request at its model's configured prices, as the live router bills.
        parser.add_argument(
            "--price-per-1m",
            type=float,
            metavar="USD",
            help="cost columns: one input price per 1M tokens for every model, instead of "
            f"the config's (default with the multipliers: {defaults.price_per_1m:g})",
        )
        parser.add_argument(
            "--cache-read-multiplier",
            type=float,
            metavar="X",
            help="cost columns: price multiplier of the prefix shared with the session's "
            f"previous request, instead of the config's (default: {defaults.read_multiplier:g})",
        )
        parser.add_argument(
            "--cache-write-multiplier",
            type=float,
            metavar="X",
            help="cost columns: price multiplier of the rest of the prompt, written to the "
            f"cache (default: {defaults.write_multiplier:g}; 1 for no write premium)",
        )

    def handle(self, *args, paths, json_out, payloads, model, **options):
        paths = paths or self._default_logs()
        if options["tools_tokens"] < 0:
            raise CommandError("--tools-tokens: must be 0 or more")
        try:
            prices = self._prices(options)
        except ReplayError as error:
            raise CommandError(str(error)) from None
        try:
            overrides = cli_overrides(
                budget_tokens=options["budget_tokens"],
                keep_last_turns=options["keep_last_turns"],
                keep_last_tool_results=options["keep_last_tool_results"],
                window_step=options["window_step"],
                relevance=options["relevance"],
                pinch=not options["no_pinch"],
                payback=options["payback"],
                settings=options["config_sets"],
            )
            config, source = with_listed_model(replay_config(overrides), model)
            model = replay_model(config, model)
            skipped: list[str] = []
            sessions = load_sessions(paths, skipped, options["max_file_mb"] * 2**20)
        except (ReplayError, CorpusError) as error:
            raise CommandError(str(error)) from None
        for reason in skipped:
            self.stderr.write(f"skipped {reason}")
        # Opened before the replay: a typo in a path should not cost a full run.
        with ExitStack() as files:
            out = self._open(json_out, files)
            payloads_out = self._open(payloads, files)
            try:
                # One run per price model: pinch decides by the prices it is billed at.
                models = list(dict.fromkeys([prices, *PRICE_MODELS]))
                priced = {}
                for k, price_model in enumerate(models):
                    sink = payload_writer(payloads_out, price_model) if payloads_out else None
                    priced[price_model] = replay(
                        sessions,
                        config,
                        model=model,
                        progress=self._progress_of(k, len(models)),
                        tools_tokens=options["tools_tokens"],
                        prices=price_model,
                        cold_gaps=not options["no_cold_gaps"],
                        payloads=sink,
                    )
                result = priced[prices]
                if out is not None:
                    write_json_lines(result, out)
            except ReplayError as error:
                raise CommandError(str(error)) from None
            finally:
                self._end_progress()
        settings = describe_settings(config, model)
        if options["tools_tokens"]:
            settings += f" tools_tokens={options['tools_tokens']}"
        if options["no_cold_gaps"]:
            settings += " cold_gaps=off"
        self.stdout.write(verdict(result, prices, priced, model, source))
        self.stdout.write(settings)
        self.stdout.write(self._prices_line(prices, config, result, source))
        if options["table"]:
            self.stdout.write(render_table(result, prices, priced, options["by_family"]))
            self.stdout.write(
                "What the agents did next (per result and turn seen; 95% Wilson intervals): "
                "exposure = the real agent repeated a call whose result pinch compressed"
            )
            self.stdout.write(render_quality_table(replay_quality(sessions, result)))
        else:
            self.stdout.write("Per session, and what the agents did next: --table.")
        if result.errors:
            self.stderr.write(describe_errors(result))

    @staticmethod
    def _open(path: str | None, files: ExitStack):
        """``path`` opened for writing until ``files`` closes (None: not asked for)."""
        if not path:
            return None
        try:
            return files.enter_context(open(path, "w", encoding="utf-8"))
        except OSError as error:
            raise CommandError(f"cannot write {path}: {error.strerror}") from None

    @staticmethod
    def _default_logs() -> list[str]:
        """Claude Code's and Codex CLI's own log folders, those that exist."""
        folders = [Path(folder).expanduser() for folder in DEFAULT_LOG_FOLDERS]
        found = [str(folder) for folder in folders if folder.is_dir()]
        if not found:
            raise CommandError(
                "Give the sessions to replay (files or folders): neither "
                f"{' nor '.join(DEFAULT_LOG_FOLDERS)} exists here."
            )
        return found

    @staticmethod
    def _prices(options) -> Prices:
        """The headline's price model: the config's, unless a price option is given."""
        given = {
            "price_per_1m": options["price_per_1m"],
            "read_multiplier": options["cache_read_multiplier"],
            "write_multiplier": options["cache_write_multiplier"],
        }
        given = {name: value for name, value in given.items() if value is not None}
        return CachePrices(**given) if given else CONFIGURED

    @staticmethod
    def _prices_line(prices, config, result, source) -> str:
        """Which prices the cost columns used: the reader must not have to guess."""
        ratios = "x (read, write): cost with pinch over cost without under that price model"
        if prices is CONFIGURED:
            used = describe_configured_prices(config, (r.model for r in result.records))
            whose = source.describe() if source else "its model's configured prices"
            return f"cost: each request at {whose} ({used}); {ratios}"
        return (
            f"cost: ${prices.price_per_1m:g} per 1M input tokens for every model, prefix shared "
            f"with the session's previous request x{prices.read_multiplier:g} (cache read), the "
            f"rest x{prices.write_multiplier:g} (cache write); {ratios}"
        )

    _bar_started = False

    def _progress_of(self, run: int, runs: int):
        def progress(done: int, total: int) -> None:
            self._progress(done, total, run, runs)

        return progress

    def _progress(self, done: int, total: int, run: int = 0, runs: int = 1) -> None:
        # Redraw only when the bar or the count moves visibly: a replay is a few
        # thousand requests and a terminal write per request would dominate.
        if done != total and done % 100:
            return
        # The bar spans every run; the count is this run's requests, the number a
        # reader knows (2,186 requests, not 6,558 steps of three price models).
        overall = (run * total + done) / (runs * total) if total else 1
        filled = int(BAR_WIDTH * overall)
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        self.stderr.write(
            f"\r[{bar}] {done:,}/{total:,} requests, price model {run + 1} of {runs}", ending=""
        )
        self.stderr.flush()
        self._bar_started = True

    def _end_progress(self) -> None:
        if self._bar_started:
            self.stderr.write("", ending="\n")
            self._bar_started = False
