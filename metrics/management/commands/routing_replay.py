"""routing_replay PATH...: where auto sends recorded sessions and what routing and pinch save."""

from django.core.management.base import BaseCommand, CommandError

from metrics.replay import cli_overrides, replay_config
from metrics.route_replay import reasons_line, route_table
from routing.replay.corpus import CorpusError, load_sessions
from routing.replay.routes import baseline_model_id, route_replay
from routing.replay.sessions import PRICE_MODELS, ReplayError


class Command(BaseCommand):
    help = (
        "Replay agent sessions through the router's planning path four ways (pinned to the "
        "baseline model or auto, pinch off or on) under each cache price model, each model at "
        "its own prices, and print the cost, the tiers and the model changes per session."
    )

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", metavar="PATH", help="a file or a directory")
        parser.add_argument(
            "--tools-tokens",
            type=int,
            default=0,
            metavar="N",
            help="add a tool definition of about N tokens to every request (Claude Code: ~21k)",
        )
        parser.add_argument(
            "--set",
            dest="config_sets",
            action="append",
            metavar="KEY=VALUE",
            help="any config key, e.g. --set routing.session.enabled=false (repeatable)",
        )

    def handle(self, *args, paths, tools_tokens, config_sets, **options):
        if tools_tokens < 0:
            raise CommandError("--tools-tokens: must be 0 or more")
        try:
            config = replay_config(cli_overrides(settings=config_sets))
            sessions = load_sessions(paths)
            runs = {
                prices: route_replay(sessions, config, prices, tools_tokens)
                for prices in PRICE_MODELS
            }
        except (ReplayError, CorpusError) as error:
            raise CommandError(str(error)) from None
        self.stdout.write(
            f"{len(sessions)} sessions, baseline {baseline_model_id(config)}, "
            f"tools block {tools_tokens:,} tokens; models: "
            + ", ".join(
                f"{m.id} ({m.tier}, ${m.prompt_price:g}/M)" for m in config.models if m.routable
            )
        )
        self.stdout.write(route_table(runs, config, len(sessions)))
        routed = next(iter(runs.values()))["routing + pinch"]
        self.stdout.write(f"routed requests by reason: {reasons_line(routed)}")
