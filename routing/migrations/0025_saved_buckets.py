"""The median's histogram in coarser round buckets (routing.summaries.contributions.saved_bucket).

Its buckets were savings rounded down to 3 significant digits: about 2,000 a
busy day, 62,000 rows a month at a team's 3 million decisions, the largest
read of /metrics. The new buckets hold 350 a decade of savings where those held
900, and each is a run of whole old ones (every new bucket starts on a round
number of 3 significant digits), so each day's rows are regrouped where they
are, into exactly the buckets their savings fall in now: a purged day's
histogram is kept, and its median is the same as if recorded anew.
"""

from collections import Counter

from django.db import migrations, models

from routing.summaries.contributions import saved_bucket


def regroup(apps, schema_editor):
    SavedTokens = apps.get_model("routing", "SavedTokens")
    regrouped = Counter()
    for day, bucket, decisions in SavedTokens.objects.values_list("day", "bucket", "decisions"):
        regrouped[day, saved_bucket(bucket)] += decisions
    SavedTokens.objects.all().delete()
    SavedTokens.objects.bulk_create(
        (SavedTokens(day=day, bucket=bucket, decisions=n) for (day, bucket), n in regrouped.items()),
        batch_size=5000,
    )


class Migration(migrations.Migration):
    dependencies = [("routing", "0024_speed")]

    operations = [
        migrations.AlterField(
            model_name="savedtokens",
            name="bucket",
            field=models.IntegerField(help_text="Tokens saved, rounded down at most 1 % to a round number."),
        ),
        migrations.RunPython(regroup, migrations.RunPython.noop),
    ]
