"""Admin pages that look and never touch: rows written by the router alone."""


class ReadOnlyAdmin:
    """A ModelAdmin mixin: no add, change or delete, whoever asks."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
