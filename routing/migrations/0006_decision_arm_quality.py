"""Issue 20: each decision's arm and the quality signals of its request.

Written on 0005; chained after main's 0012 when main (issues 24 and 26) was merged in,
so the branch has one leaf.
"""

from django.db import migrations, models


def _int(help_text):
    return models.IntegerField(blank=True, null=True, help_text=help_text)


class Migration(migrations.Migration):
    dependencies = [("routing", "0007_decision_session")]

    operations = [
        migrations.AddField(
            model_name="routedecision",
            name="arm",
            field=models.CharField(
                default="control",
                help_text="The conversation's arm (routing/experiments.py): control, holdout "
                "(pinch off) or an experiment's name.",
                max_length=40,
            ),
        ),
        migrations.AddField(
            model_name="routedecision",
            name="quality_calls",
            field=_int("Tool calls in the agent's newest message."),
        ),
        migrations.AddField(
            model_name="routedecision",
            name="quality_repeats_compressed",
            field=_int(
                "Of those, repeats of an earlier call whose result the agent saw compressed."
            ),
        ),
        migrations.AddField(
            model_name="routedecision",
            name="quality_repeats_whole",
            field=_int("Repeats of an earlier call whose result it saw whole."),
        ),
        migrations.AddField(
            model_name="routedecision",
            name="quality_seen_compressed",
            field=_int("Tool results it saw compressed before that message."),
        ),
        migrations.AddField(
            model_name="routedecision",
            name="quality_seen_whole",
            field=_int("Tool results it saw whole before that message."),
        ),
        migrations.AddField(
            model_name="routedecision",
            name="quality_results",
            field=_int("Tool results answering its newest message."),
        ),
        migrations.AddField(
            model_name="routedecision",
            name="quality_errors",
            field=_int("Of those, results that report an error."),
        ),
        migrations.AddField(
            model_name="routedecision",
            name="quality_task",
            field=_int("Which user task of the conversation this request serves (1: the first)."),
        ),
        migrations.AddField(
            model_name="routedecision",
            name="answer_tool_calls",
            field=models.BooleanField(
                blank=True, null=True, help_text="The answer asked for tool calls (NULL: not seen)."
            ),
        ),
    ]
