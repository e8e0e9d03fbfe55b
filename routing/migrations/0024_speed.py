"""The conversation keeps the results its model recalled twice (issue 42): planning reads
them with the conversation's state, or from the worker's memory, instead of a query of the
recall store on every request. Existing conversations get theirs from the store here."""

from django.db import migrations, models

RESTORE_AFTER = 2  # routing.models.recall.RESTORE_AFTER, as of this migration


def fill(apps, schema_editor):
    original = apps.get_model("routing", "RecallOriginal")
    conversation = apps.get_model("routing", "Conversation")
    restored: dict[str, set[int]] = {}
    rows = original.objects.filter(recalls__gte=RESTORE_AFTER).values_list("conversation", "handle")
    for key, handle in rows.iterator():
        digits = handle[1:] if handle.startswith("r") else ""
        if digits.isascii() and digits.isdigit():
            restored.setdefault(key, set()).add(int(digits))
    for key, indexes in restored.items():
        conversation.objects.filter(key=key).update(
            recall_restored=",".join(map(str, sorted(indexes)))
        )


class Migration(migrations.Migration):
    dependencies = [
        ("routing", "0022_recall_summaries"),
    ]

    operations = [
        migrations.AddField(
            model_name="conversation",
            name="recall_restored",
            field=models.TextField(
                blank=True,
                default="",
                help_text="The message indexes of its results the model recalled in two "
                "requests or more, comma-separated, which pinch sends whole "
                "(routing.recall.store.restored); set when a recall is recorded, so planning "
                "reads it with the state.",
            ),
            preserve_default=False,
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
