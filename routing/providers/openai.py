"""The OpenAI chat-completions provider: OpenAI, OpenRouter, Ollama's /v1, vLLM, llama.cpp.

With ``responses_api: true`` the upstream also serves the Responses API
(``/responses``, as OpenAI does): ``responses`` and ``responses_stream`` send
a Responses client's own body there, untranslated, and give the answer back
as it came.

All outbound HTTP of this provider goes through ``HttpProvider._send``. The
provider's key comes from the environment variable its config names and is
sent upstream; it is never logged and never put in an error message.
"""

from routing import jsonio
from routing.errors import ProviderError
from routing.protocols.base import StreamReply
from routing.providers.base import Capabilities, error_from_response
from routing.providers.http import HttpProvider


class OpenAICompatibleProvider(HttpProvider):
    def __init__(self, name, config):
        super().__init__(name, config)
        # An attribute, not a property: the plan reads it without calling into the provider.
        self.capabilities = Capabilities(responses=config.responses_api)

    def _headers(self) -> dict:
        headers = {"Content-Type": "application/json"}
        key = self.api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _post(self, body: dict, stream: bool, deadline: float, path="/chat/completions"):
        data = jsonio.dumps(body)
        url = f"{self.config.base_url}{path}"
        return self._send(url, data, self._headers(), stream, deadline)

    def chat(self, body: dict, timeout: float | None = None, context=None) -> dict:
        response = self._post(body, stream=False, deadline=timeout or self.config.timeout_seconds)
        try:
            if response.status_code != 200:
                raise error_from_response(
                    response, self.name, self.config.api_key(), self.config.api_key_env
                )
            data = self._json_body(response)
            if not isinstance(data.get("choices"), list):
                raise ProviderError(
                    "malformed", f"provider {self.name!r} answered without 'choices'"
                )
            return data
        finally:
            response.close()

    def chat_stream(self, body: dict, context=None, path="/chat/completions") -> StreamReply:
        response = self._post(body, stream=True, deadline=self.config.timeout_seconds, path=path)
        if response.status_code != 200:
            try:
                raise error_from_response(
                    response, self.name, self.config.api_key(), self.config.api_key_env
                )
            finally:
                response.close()
        return StreamReply(response, self._read_events(response))

    def _responses_api(self) -> None:
        if not self.config.responses_api:
            raise NotImplementedError(f"provider {self.name!r} has no responses_api: true")

    def responses(self, body: dict) -> dict:
        self._responses_api()
        response = self._post(
            body, stream=False, deadline=self.config.timeout_seconds, path="/responses"
        )
        try:
            if response.status_code != 200:
                raise error_from_response(
                    response, self.name, self.config.api_key(), self.config.api_key_env
                )
            data = self._json_body(response)
            if data.get("object") != "response" or not isinstance(data.get("output"), list):
                raise ProviderError(
                    "malformed", f"provider {self.name!r} answered without a response"
                )
            return data
        finally:
            response.close()

    def responses_stream(self, body: dict) -> StreamReply:
        self._responses_api()
        return self.chat_stream(body, path="/responses")
