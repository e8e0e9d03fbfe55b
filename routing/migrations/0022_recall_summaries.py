"""Recall as a quality signal (metrics/recall_quality.py): each arm's hour keeps its answered
pruned decisions, recalls and recalled tokens, and the conversations pinch pruned whose
latest decision falls in it; each conversation and task keeps its answered pruned decisions.

Existing summary rows get zeros: run ``manage.py rebuild_summaries`` once after
migrating (docs/summaries.md, Upgrading).
"""

from django.db import migrations, models

PRUNED = "Answered decisions pinch sent fewer tokens than it was given."


def _count(help_text: str) -> models.BigIntegerField:
    return models.BigIntegerField(default=0, help_text=help_text)


class Migration(migrations.Migration):
    dependencies = [
        ("routing", "0021_scale_moments"),
    ]

    operations = [
        migrations.AddField(model_name="armhour", name="pruned", field=_count(PRUNED)),
        migrations.AddField(
            model_name="armhour",
            name="recalls",
            field=_count("Calls of the router's recall tool it answered itself."),
        ),
        migrations.AddField(
            model_name="armhour",
            name="recalled_tokens",
            field=_count("Tokens of the originals those recalls gave back."),
        ),
        migrations.AddField(
            model_name="armhour",
            name="pruned_conversations",
            field=_count("Conversations with an answered decision pinch pruned."),
        ),
        migrations.AddField(model_name="qualityunit", name="pruned", field=_count(PRUNED)),
    ]
