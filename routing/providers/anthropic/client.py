"""The Anthropic Messages provider: Claude models behind the chat-completions front.

It takes the chat-completions body the dispatcher sends every provider,
translates it (``request``, ``response``, ``stream`` here), places prompt-cache breakpoints
on the prefix pinch will not rewrite, POSTs ``{base_url}/v1/messages``, and
answers chat-completions JSON or chat-completions SSE events, so the
dispatcher's retries, fallback and relay work as for any provider.

A request that came in on /v1/messages (Claude Code) is sent as the client
wrote it instead (``messages``, ``messages_stream``, ``count_tokens``): only
breakpoints are added and the client's anthropic-beta and anthropic-version
forwarded, and the answer comes back untranslated (routing.protocols.messages.wire).

The key (``x-api-key``) comes from the environment variable the config
names; it is never logged, and a key quoted in an error is redacted before
the error is relayed.
"""

from routing import jsonio
from routing.errors import ProviderError
from routing.protocols.base import StreamReply, TranslationError
from routing.providers.anthropic import errors as anthropic_errors
from routing.providers.anthropic.cache import place_breakpoints
from routing.providers.anthropic.request import to_messages_request
from routing.providers.anthropic.response import to_chat_completion
from routing.providers.anthropic.stream import chat_chunks
from routing.providers.base import CallContext, Capabilities, error_from_response
from routing.providers.http import HttpProvider

# Without a model config (no cache block) a prefix under this is not worth a breakpoint.
DEFAULT_MIN_CACHE_TOKENS = 1024


class AnthropicProvider(HttpProvider):
    capabilities = Capabilities(messages=True, cache_breakpoints=True)

    def _headers(self) -> dict:
        headers = {
            "Content-Type": "application/json",
            "anthropic-version": self.config.anthropic_version,
        }
        if self.config.anthropic_beta:
            headers["anthropic-beta"] = ",".join(self.config.anthropic_beta)
        key = self.api_key()
        if key:
            headers["x-api-key"] = key
        return headers

    def messages_body(self, body: dict, context: CallContext | None) -> dict:
        """The Messages request for a chat-completions body, breakpoints placed."""
        model = context.model if context else None
        try:
            request = to_messages_request(
                body,
                model.default_max_tokens if model else None,
                self.config.anthropic_version,
            )
        except TranslationError as error:
            raise ProviderError(
                "status",
                f"provider {self.name!r}: {error.message}",
                400,
                anthropic_errors.openai_error_body(
                    "invalid_request_error", error.message, error.param
                ),
            ) from None
        return self._with_breakpoints(request, context, len(body["messages"]))

    def _with_breakpoints(self, request, context: CallContext | None, messages: int) -> dict:
        model = context.model if context else None
        cache = model.cache if model else None
        stable, previous = (context and context.stable_prefixes) or (messages, messages)
        place_breakpoints(
            request,
            stable,
            previous,
            cache.min_tokens if cache else DEFAULT_MIN_CACHE_TOKENS,
            cache.ttl if cache else "5m",
        )
        return request.body

    def _post(self, body: dict, context, stream: bool, deadline: float):
        return self._post_messages(self.messages_body(body, context), stream, deadline)

    def _post_messages(
        self, body: dict, stream: bool, deadline: float, headers=None, path="/v1/messages"
    ):
        data = jsonio.dumps(body)
        url = f"{self.config.base_url}{path}"
        response = self._send(url, data, {**self._headers(), **(headers or {})}, stream, deadline)
        if response.status_code != 200:
            try:
                raise self._status_error(response)
            finally:
                response.close()
        return response

    def chat(
        self, body: dict, timeout: float | None = None, context: CallContext | None = None
    ) -> dict:
        response = self._post(
            body, context, stream=False, deadline=timeout or self.config.timeout_seconds
        )
        return to_chat_completion(self._message(response))

    def _message(self, response) -> dict:
        try:
            message = self._json_body(response)
        finally:
            response.close()
        if message.get("type") != "message" or not isinstance(message.get("content"), list):
            raise ProviderError("malformed", f"provider {self.name!r} answered without a message")
        return message

    def chat_stream(self, body: dict, context: CallContext | None = None) -> StreamReply:
        response = self._post(body, context, stream=True, deadline=self.config.timeout_seconds)
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        events = self._read_events(response)
        return StreamReply(response, self._chunks(events, include_usage))

    def _chunks(self, events, include_usage: bool):
        try:
            done = False
            for event in chat_chunks(events, include_usage):
                done = event.done
                yield event
        except anthropic_errors.StreamError as error:
            # Before anything reached the client (an error as the first event),
            # the dispatcher may still retry it, by its status.
            raise ProviderError(
                "status",
                f"provider {self.name!r} stream error: {error}",
                anthropic_errors.stream_error_status(error.error_type),
                anthropic_errors.openai_error_body(error.error_type, error.message),
            ) from None
        if not done:
            raise ProviderError("connect", f"provider {self.name!r} stream ended mid-answer")

    # The Messages API as the client sent it (/v1/messages in, this provider out):
    # the request is the client's own, only breakpoints are added, and the
    # answer comes back untranslated. ``headers``: the client's anthropic-beta
    # and anthropic-version, forwarded.

    def messages(self, request, context: CallContext | None, headers: dict) -> dict:
        body = self._with_breakpoints(request, context, len(request.block_of))
        response = self._post_messages(
            body, False, self.config.timeout_seconds, self._forwarded(headers)
        )
        return self._message(response)

    def messages_stream(self, request, context: CallContext | None, headers: dict) -> StreamReply:
        body = self._with_breakpoints(request, context, len(request.block_of))
        response = self._post_messages(
            body, True, self.config.timeout_seconds, self._forwarded(headers)
        )
        return StreamReply(response, self._read_events(response))

    def count_tokens(self, body: dict, headers: dict) -> dict:
        response = self._post_messages(
            body,
            False,
            self.config.timeout_seconds,
            self._forwarded(headers),
            "/v1/messages/count_tokens",
        )
        try:
            return self._json_body(response)
        finally:
            response.close()

    def _forwarded(self, headers: dict) -> dict:
        """The client's anthropic-version, and its anthropic-beta flags before the config's."""
        forwarded = {}
        if headers.get("anthropic-version"):
            forwarded["anthropic-version"] = headers["anthropic-version"]
        betas = [b.strip() for b in (headers.get("anthropic-beta") or "").split(",") if b.strip()]
        betas += [b for b in self.config.anthropic_beta if b not in betas]
        if betas:
            forwarded["anthropic-beta"] = ",".join(betas)
        return forwarded

    def _status_error(self, response) -> ProviderError:
        error = error_from_response(
            response, self.name, self.config.api_key(), self.config.api_key_env
        )
        # The same failure, in the error shape our chat-completions clients read.
        error_type, detail = anthropic_errors.error_parts(error.body)
        error.body = anthropic_errors.openai_error_body(error_type, detail or error.message)
        return error
