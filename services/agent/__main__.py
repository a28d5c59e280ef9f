"""python -m services.agent: run the agent service."""

from services.agent.config import AgentSettings
from services.agent.server import build
from shared.runtime import serve

if __name__ == "__main__":
    serve("agent", build, AgentSettings)
