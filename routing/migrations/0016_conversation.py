"""The Conversation table, built from the decision rows, which then lose the state columns.

One aggregate query gives every conversation's totals (routing.conversations.TOTALS,
the figures the write path adds up), one window query each conversation's last row
(its state, what it holds), one the models it used; the rows go in by batches.
"""

from django.db import migrations, models

import django.db.models.deletion


def build_conversations(apps, schema_editor):
    # The builder is the totals' own module's (routing.conversations.build_from_log); the
    # state columns were still on the decision rows then, and go to the conversation too.
    from routing.conversations import HELD, LAST, build_from_log

    build_from_log(
        apps.get_model("routing", "RouteDecision"),
        apps.get_model("routing", "Conversation"),
        {"api_key_id": "api_key_id", **HELD, **LAST},
    )


class Migration(migrations.Migration):
    dependencies = [
        ("routing", "0015_summaries"),
    ]

    operations = [
        migrations.CreateModel(
            name='Conversation',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('key', models.CharField(help_text="The decisions' conversation hash (the router key is in its seed).", max_length=32, unique=True)),
                ('session', models.CharField(blank=True, help_text='The agent session.', max_length=200)),
                ('agent', models.CharField(blank=True, max_length=32)),
                ('arm', models.CharField(blank=True, max_length=40)),
                ('model', models.CharField(blank=True, help_text="Its last request's model.", max_length=200)),
                ('tier', models.CharField(blank=True, max_length=50)),
                ('models_used', models.TextField(blank=True)),
                ('route_state', models.TextField(blank=True, help_text='The routing state (tier, model, where its task began, when): routing.session_routing.')),
                ('pinch_ledger', models.TextField(blank=True, help_text="Pinch's ledger (pinch/ledger.py: what is decided, when).")),
                ('payload_fingerprints', models.TextField(blank=True, help_text="The last payload's per-message hashes, shortened (pinch.prefix.packed), for the prefix probe; blanked a day after the last request.")),
                ('first_at', models.DateTimeField(help_text='Its first decision.')),
                ('last_at', models.DateTimeField(help_text='Its latest decision: whose state it holds.')),
                ('last_status', models.IntegerField(blank=True, null=True)),
                ('last_answer_tool_calls', models.BooleanField(blank=True, help_text='Its latest answer asked for tool calls (NULL: not seen).', null=True)),
                ('requests', models.BigIntegerField(default=0, help_text='Decisions recorded.')),
                ('failed_requests', models.BigIntegerField(default=0, help_text='Of those, answered with an error (or never answered).')),
                ('turns', models.BigIntegerField(default=0, help_text='Requests of its main conversation in which the user spoke.')),
                ('subagent_requests', models.BigIntegerField(default=0, help_text="Requests of a subagent (Claude Code's Agent tool).")),
                ('background_requests', models.BigIntegerField(default=0, help_text='Background requests (titles, summaries).')),
                ('tokens_sent', models.BigIntegerField(default=0, help_text='Estimated prompt tokens sent, after pinch.')),
                ('tokens_saved', models.BigIntegerField(default=0, help_text='Prompt tokens pinch removed.')),
                ('billed_requests', models.BigIntegerField(default=0, help_text='Requests whose provider reported usage (both costs known).')),
                ('billed_usd', models.FloatField(default=0.0, help_text='Prompt cost as billed.')),
                ('unpruned_usd', models.FloatField(default=0.0, help_text='Estimated prompt cost without pinch, of the billed requests.')),
                ('net_saved_usd', models.FloatField(default=0.0, help_text='Unpruned minus billed cost, of the billed requests.')),
                ('quality_calls', models.BigIntegerField(default=0, help_text="Tool calls in the agent's messages.")),
                ('quality_repeats_compressed', models.BigIntegerField(default=0, help_text='Repeats of a call whose result it saw compressed.')),
                ('quality_repeats_whole', models.BigIntegerField(default=0, help_text='Repeats of a call whose result it saw whole.')),
                ('quality_seen_compressed', models.BigIntegerField(default=0, help_text='Tool results seen compressed, per turn.')),
                ('quality_seen_whole', models.BigIntegerField(default=0, help_text='Tool results seen whole, per turn.')),
                ('quality_results', models.BigIntegerField(default=0, help_text='Tool results.')),
                ('quality_errors', models.BigIntegerField(default=0, help_text='Tool results that report an error.')),
                ('api_key', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='conversations', to='routing.apikey')),
            ],
            options={
                'ordering': ['-last_at'],
                'indexes': [models.Index(fields=['last_at'], name='conversation_last_idx'), models.Index(fields=['session'], name='conversation_session_idx')],
            },
        ),
        migrations.RunPython(build_conversations, migrations.RunPython.noop),
        migrations.RemoveField(
            model_name='routedecision',
            name='payload_fingerprints',
        ),
        migrations.RemoveField(
            model_name='routedecision',
            name='pinch_ledger',
        ),
        migrations.RemoveField(
            model_name='routedecision',
            name='route_state',
        ),
    ]
