"""A test client whose handler takes the API's shorter way (router_project.api_front.ApiFront),
as the served application does; Django's own test client takes the whole middleware chain."""

from django.test import Client
from django.test.client import ClientHandler

from router_project.api_front import ApiFront


class ApiFrontClientHandler(ApiFront, ClientHandler):
    pass


class ApiFrontClient(Client):
    def __init__(self, *args, enforce_csrf_checks=False, **kwargs):
        super().__init__(*args, enforce_csrf_checks=enforce_csrf_checks, **kwargs)
        self.handler = ApiFrontClientHandler(enforce_csrf_checks)
