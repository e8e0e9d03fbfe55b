"""Django admin for the router: the decision log, sessions, the model registry, API keys, controls.

Every change of router state goes through a named service (``routing.config.store``,
``routing.auth``); these modules only validate forms and call them.
"""

from routing.admin import decisions, keys, registry, sessions  # noqa: F401  (register)
