"""The front page (/): public, it says where the API is and links the dashboard and admin.

Django admin's "View site" lands here. It belongs to the project rather than to
an app: it points at every app's pages.
"""

from django.shortcuts import render

from routing.urls import served_endpoints


def home(request):
    context = {
        "api_base_url": request.build_absolute_uri("/v1"),
        "endpoints": served_endpoints(),
    }
    return render(request, "home.html", context)
