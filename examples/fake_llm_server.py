"""Run the fake OpenAI/Anthropic-compatible LLM server in the foreground (no API key, no network).

    python examples/fake_llm_server.py --port 8089

Point an OpenAI client at ``http://127.0.0.1:8089/v1`` or an Anthropic client at
``http://127.0.0.1:8089``. Directives in the last user message steer the reply: ``[error:429]``,
``[error:500]``, ``[tool:NAME]``, ``[slow:MS]``, ``[chunks:N]``; otherwise it answers ``echo: <text>``.
"""

from __future__ import annotations

import argparse
import threading

from reach_otel.testing.fake_llm import FakeLLMServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8089, help="0 picks a free port")
    parser.add_argument("--chunk-delay", type=float, default=0.0, help="seconds between stream chunks")
    args = parser.parse_args(argv)
    server = FakeLLMServer(host=args.host, port=args.port, chunk_delay_s=args.chunk_delay).start()
    print(f"fake LLM listening on {server.url}", flush=True)
    print(f"  OpenAI base_url:    {server.openai_base_url}", flush=True)
    print(f"  Anthropic base_url: {server.anthropic_base_url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
