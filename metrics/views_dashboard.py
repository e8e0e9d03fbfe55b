"""The dashboard (/dashboard/, staff only): server-rendered, no JavaScript."""

from django.contrib.admin.views.decorators import staff_member_required
from django.shortcuts import render
from django.views.decorators.cache import never_cache

from metrics.dashboard import dashboard_context
from metrics.permissions import may_view_decisions
from routing.config import ConfigError
from routing.config.store import current_config


@never_cache
@staff_member_required
def dashboard(request):
    try:
        config = current_config()
    except ConfigError as error:
        # The router cannot serve either; say why instead of a bare 500.
        return render(request, "metrics/config_error.html", {"error": str(error)}, status=503)
    context = dashboard_context(
        config,
        show_decisions=may_view_decisions(request),
        sessions_dearest_first=request.GET.get("sessions") == "dearer",
    )
    return render(request, "metrics/dashboard.html", context)
