from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("routing", "0008_decision_cache_forecast"),  # re-chained after main (0010, 0012, 0007 landed)
    ]

    operations = [
        migrations.AddField(
            model_name="routedecision",
            name="over_window",
            field=models.BooleanField(
                default=False,
                help_text="A pinned model was sent a prompt (plus max_tokens) larger than its "
                "context window, as asked (the X-Router-Window-Exceeded header said so).",
            ),
        ),
    ]
