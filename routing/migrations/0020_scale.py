"""The savings by cause's billed decisions without a cache (issue 41): no cache credited.

Existing summary rows get zeros: run ``manage.py rebuild_summaries`` once after
migrating (docs/summaries.md, Upgrading).
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("routing", "0019_reliability"),
    ]

    operations = [
        migrations.AddField(
            model_name="decisionsummary",
            name="uncached_prompt_tokens",
            field=models.BigIntegerField(
                default=0, help_text="Prompt tokens of the billed decisions without a cache."
            ),
        ),
        migrations.AddField(
            model_name="decisionsummary",
            name="uncached_removed_tokens",
            field=models.BigIntegerField(default=0, help_text="Tokens pinch removed from those."),
        ),
        migrations.AddField(
            model_name="decisionsummary",
            name="uncached_unpruned_usd",
            field=models.FloatField(
                default=0.0, help_text="Their prompt unpruned (at the full price)."
            ),
        ),
    ]
