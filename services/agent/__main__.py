"""python -m services.agent: run the agent service."""

from services.agent.config import AgentSettings
from services.agent.server import AgentService
from services.agent.wiring import build
from shared.rpc.runtime import serve, serving

if __name__ == "__main__":
    serve("agent", serving(build, AgentService), AgentSettings)
