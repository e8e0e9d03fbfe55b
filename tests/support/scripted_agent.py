"""A minimal agent loop for the quality tests: it runs the tools the model asks for, until done.

The model is the test upstream's script (``UpstreamServer.script``, model
names starting with ``script``); the agent talks to the router with the
official openai SDK, as a real agent would. ``files`` are what ``read``
returns; a path not in it reads as an error, the way a shell reports one.
``stop_after`` ends the loop with calls unanswered: an agent that gave up
mid tool loop.
"""

import json

READ_TOOL = {
    "type": "function",
    "function": {
        "name": "read",
        "description": "Read a file of the repository.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
}


def tool_call(name, call_id, **arguments) -> dict:
    """An assistant message asking for one call, as an agent's history holds it."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }


def run_agent(sdk, model, task, files, stop_after=None, stream=False, max_turns=20):
    """The conversation as the agent sent it, its final text answer appended (if any)."""
    messages = [{"role": "user", "content": task}]
    for turn in range(max_turns):
        if stream:
            answer = _streamed(sdk, model, messages)
        else:
            choice = sdk.chat.completions.create(
                model=model, messages=messages, tools=[READ_TOOL]
            ).choices[0]
            answer = choice.message.model_dump(exclude_none=True)
        messages.append(answer)
        calls = answer.get("tool_calls") or []
        if not calls or (stop_after is not None and turn + 1 >= stop_after):
            return messages
        for call in calls:
            path = json.loads(call["function"]["arguments"]).get("path")
            content = files.get(path, f"Error: No such file or directory: {path}")
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
    return messages


def _streamed(sdk, model, messages):
    calls, text = {}, []
    for chunk in sdk.chat.completions.create(
        model=model, messages=messages, tools=[READ_TOOL], stream=True
    ):
        for choice in chunk.choices:
            delta = choice.delta
            text.append(delta.content or "")
            for call in delta.tool_calls or ():
                entry = calls.setdefault(
                    call.index,
                    {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                )
                entry["id"] += call.id or ""
                if call.function is not None:
                    entry["function"]["name"] += call.function.name or ""
                    entry["function"]["arguments"] += call.function.arguments or ""
    answer = {"role": "assistant", "content": "".join(text) or None}
    if calls:
        answer["tool_calls"] = [calls[k] for k in sorted(calls)]
    return answer
