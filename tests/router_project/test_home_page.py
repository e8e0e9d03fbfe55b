"""The site's front page (/): where admin's "View site" lands, linking what an operator needs."""

import pytest


@pytest.mark.django_db
def test_the_front_page_names_the_api_base_url_and_links_dashboard_and_admin(client):
    response = client.get("/")

    assert response.status_code == 200
    body = response.content.decode()
    assert 'data-testid="api-base-url">http://testserver/v1<' in body
    assert 'href="/dashboard/"' in body and 'href="/admin/"' in body
    assert "<code>POST /v1/chat/completions</code>" in body
    assert "<code>demo</code>" in body


@pytest.mark.django_db
def test_admins_view_site_link_leads_to_the_front_page(client, staff_user):
    client.force_login(staff_user)
    admin = client.get("/admin/").content.decode()
    assert '<a href="/">View site</a>' in admin
    assert client.get("/").status_code == 200
