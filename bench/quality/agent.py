"""A minimal coding agent: the model asks for tools, the agent runs them in the task's directory.

Our own loop rather than mini-swe-agent: mini-swe-agent speaks through
LiteLLM and a bash-only text protocol, while this needs nothing but the
openai SDK and native tool calls, which every OpenAI-compatible server
(vLLM, llama.cpp's server, Ollama) and the router speak. Five tools, the
usual ones of coding agents: list the files, read one, write one, replace
text in one, run a command (the tests). Output is capped per call
(``OUTPUT_CHARS``), as real agents cap it; results are kept whole in the
conversation, which is what pinch then prunes.

The loop ends when the model answers without asking for a tool (finished)
or after ``max_turns`` requests (stopped). Usage is summed from what the
router relayed, cache reads included, to price the task.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

OUTPUT_CHARS = 20_000  # a command's output is cut here, head and tail kept
COMMAND_SECONDS = 60

SYSTEM = (
    "You are a careful software engineer working in a Python repository. Use the tools to "
    "look at the code, change it and run the tests. Change only what the task needs."
)


def _function(name, description, **properties):
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {key: {"type": "string"} for key in properties},
                "required": list(properties),
            },
        },
    }


TOOLS = [
    _function("list_files", "List the repository's files."),
    _function("read_file", "Read a file.", path="path relative to the repository"),
    _function("write_file", "Write a whole file.", path="path", content="the new content"),
    _function(
        "replace_in_file",
        "Replace one exact occurrence of old with new in a file.",
        path="path",
        old="text to replace",
        new="replacement",
    ),
    _function("run", "Run a shell command in the repository (60 s).", command="the command"),
]


@dataclass
class AgentRun:
    turns: int = 0
    finished: bool = False
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    error: str = ""


def _cap(text: str) -> str:
    if len(text) <= OUTPUT_CHARS:
        return text
    half = OUTPUT_CHARS // 2
    return f"{text[:half]}\n[... {len(text) - OUTPUT_CHARS} chars cut ...]\n{text[-half:]}"


def _inside(root: Path, path: str) -> Path:
    target = (root / path).resolve()
    if root.resolve() not in (target, *target.parents):
        raise ValueError(f"{path}: outside the repository")
    return target


def run_tool(root: Path, name: str, arguments: dict) -> str:
    """The tool's output as the model reads it; failures are reported, never raised."""
    try:
        if name == "list_files":
            return "\n".join(
                str(p.relative_to(root))
                for p in sorted(root.rglob("*"))
                if p.is_file() and "__pycache__" not in p.parts
            )
        if name == "read_file":
            return _cap(_inside(root, arguments["path"]).read_text())
        if name == "write_file":
            _inside(root, arguments["path"]).write_text(arguments["content"])
            return f"wrote {arguments['path']}"
        if name == "replace_in_file":
            target = _inside(root, arguments["path"])
            text = target.read_text()
            if text.count(arguments["old"]) != 1:
                return f"Error: the text occurs {text.count(arguments['old'])} times, not once"
            target.write_text(text.replace(arguments["old"], arguments["new"]))
            return f"replaced in {arguments['path']}"
        if name == "run":
            done = subprocess.run(
                arguments["command"],
                shell=True,
                cwd=root,
                capture_output=True,
                text=True,
                timeout=COMMAND_SECONDS,
            )
            return _cap(f"Exit code {done.returncode}\n{done.stdout}{done.stderr}")
        return f"Error: no tool named {name}"
    except (OSError, KeyError, ValueError, subprocess.TimeoutExpired) as error:
        return f"Error: {type(error).__name__}: {error}"


def run_agent(client, model: str, prompt: str, root: Path, max_turns: int = 30) -> AgentRun:
    """Run the loop for one task; ``client`` is an ``openai.OpenAI`` pointed at the router."""
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}]
    run = AgentRun()
    while run.turns < max_turns:
        run.turns += 1
        try:
            answer = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
        except Exception as error:  # noqa: BLE001 - a failed request ends the task, reported
            run.error = f"{type(error).__name__}: {error}"[:300]
            return run
        usage = answer.usage
        if usage is not None:
            run.prompt_tokens += usage.prompt_tokens or 0
            run.completion_tokens += usage.completion_tokens or 0
            details = usage.prompt_tokens_details
            run.cached_tokens += (details.cached_tokens or 0) if details is not None else 0
        message = answer.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            run.finished = True
            return run
        for call in message.tool_calls:
            try:
                arguments = json.loads(call.function.arguments or "{}")
            except ValueError:
                arguments = {}
            output = run_tool(
                root, call.function.name, arguments if isinstance(arguments, dict) else {}
            )
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    return run
