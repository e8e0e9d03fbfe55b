"""pinch_replay PATH...: what pinch would save on recorded agent sessions (see metrics.replay)."""

from django.core.management.base import BaseCommand, CommandError

from metrics.replay import (
    CachePrices,
    ReplayError,
    cli_overrides,
    describe_errors,
    describe_settings,
    load_sessions,
    render_table,
    replay,
    replay_config,
    replay_model,
    write_json_lines,
)

BAR_WIDTH = 40


class Command(BaseCommand):
    help = (
        "Replay agent sessions (corpus-format JSON files, or directories of them) turn by turn "
        "through the router's planning path, with no upstream call and no database write, and "
        "print what pinch saves per session. Settings: the router's config and admin overrides, "
        "with the options below on top."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "paths",
            nargs="+",
            metavar="PATH",
            help="a conversation file or a directory of *.json files",
        )
        parser.add_argument(
            "--json",
            dest="json_out",
            metavar="OUT",
            help="write one JSON object per request to OUT (one per line)",
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
        relevance = parser.add_mutually_exclusive_group()
        relevance.add_argument(
            "--relevance",
            dest="relevance",
            action="store_const",
            const=True,
            help="pinch.relevance.enabled = true (least relevant first)",
        )
        relevance.add_argument(
            "--no-relevance",
            dest="relevance",
            action="store_const",
            const=False,
            help="pinch.relevance.enabled = false (uniform pruning)",
        )
        parser.add_argument("--no-pinch", action="store_true", help="pinch.enabled = false")
        parser.add_argument("--model", help="the requested model (default: the auto model)")
        defaults = CachePrices()
        parser.add_argument(
            "--price-per-1m",
            type=float,
            default=defaults.price_per_1m,
            metavar="USD",
            help="cost columns: full input price per 1M tokens (default: %(default)s)",
        )
        parser.add_argument(
            "--cache-read-multiplier",
            type=float,
            default=defaults.read_multiplier,
            metavar="X",
            help="cost columns: price multiplier of the prefix shared with the session's "
            "previous request (default: %(default)s)",
        )
        parser.add_argument(
            "--cache-write-multiplier",
            type=float,
            default=defaults.write_multiplier,
            metavar="X",
            help="cost columns: price multiplier of the rest of the prompt, written to the "
            "cache (default: %(default)s; 1 for no write premium)",
        )

    def handle(self, *args, paths, json_out, model, **options):
        try:
            prices = CachePrices(
                price_per_1m=options["price_per_1m"],
                read_multiplier=options["cache_read_multiplier"],
                write_multiplier=options["cache_write_multiplier"],
            )
        except ReplayError as error:
            raise CommandError(str(error)) from None
        overrides = cli_overrides(
            budget_tokens=options["budget_tokens"],
            keep_last_turns=options["keep_last_turns"],
            keep_last_tool_results=options["keep_last_tool_results"],
            window_step=options["window_step"],
            relevance=options["relevance"],
            pinch=not options["no_pinch"],
        )
        try:
            config = replay_config(overrides)
            model = replay_model(config, model)
            sessions = load_sessions(paths)
        except ReplayError as error:
            raise CommandError(str(error)) from None
        # Opened before the replay: a typo in the path should not cost a full run.
        try:
            out = open(json_out, "w", encoding="utf-8") if json_out else None  # noqa: SIM115
        except OSError as error:
            raise CommandError(f"cannot write {json_out}: {error.strerror}") from None
        try:
            result = replay(sessions, config, model=model, progress=self._progress)
            if out is not None:
                write_json_lines(result, out)
        except ReplayError as error:
            raise CommandError(str(error)) from None
        finally:
            self._end_progress()
            if out is not None:
                out.close()
        self.stdout.write(describe_settings(config, model))
        self.stdout.write(prices.describe())
        self.stdout.write(render_table(result, prices))
        if result.errors:
            self.stderr.write(describe_errors(result))

    _bar_started = False

    def _progress(self, done: int, total: int) -> None:
        # Redraw only when the bar or the count moves visibly: a replay is a few
        # thousand requests and a terminal write per request would dominate.
        if done != total and done % 10:
            return
        filled = BAR_WIDTH * done // total if total else BAR_WIDTH
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        self.stderr.write(f"\r[{bar}] {done}/{total}", ending="")
        self.stderr.flush()
        self._bar_started = True

    def _end_progress(self) -> None:
        if self._bar_started:
            self.stderr.write("", ending="\n")
            self._bar_started = False
