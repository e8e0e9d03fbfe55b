"""Admin's session list: one line per agent session, each linking to its decisions.

The figures are ``routing.agent_sessions``' (the dashboard and ``pinch_summary
--by-session`` show the same); the decisions behind a line are the decision
log filtered by ``?session=``. ``?o=net`` lists the sessions pinch saved least on
(the dearer) first. Read-only, like the decision log.
"""

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse

from routing.admin.read_only import ReadOnlyAdmin
from routing.agent_sessions import SESSIONS_SHOWN, agent_sessions
from routing.models import AgentSession


@admin.register(AgentSession)
class AgentSessionAdmin(ReadOnlyAdmin, admin.ModelAdmin):
    def has_view_permission(self, request, obj=None):
        # Sessions are the decision log summed up: who may read the one reads the other.
        return request.user.has_perm("routing.view_routedecision")

    def changelist_view(self, request, extra_context=None):
        if not self.has_view_permission(request):
            raise PermissionDenied
        # ?o=net: the sessions pinch made dearer (or saved least on) first.
        dearest_first = request.GET.get("o") == "net"
        context = {
            **self.admin_site.each_context(request),
            "title": "Agent sessions",
            "opts": self.model._meta,
            "sessions": agent_sessions(SESSIONS_SHOWN, dearest_first=dearest_first),
            "shown": SESSIONS_SHOWN,
            "dearest_first": dearest_first,
        }
        return TemplateResponse(request, "admin/routing/agentsession/change_list.html", context)
