from cli.main import main
from cli.terminal_logs import log_to_file
from shared.paths import var_dir

# The CLI as a program: its own log lines (transport text among them) go to a file, never to the terminal.
log_to_file(var_dir() / "run" / "logs" / "cli.log")
raise SystemExit(main())
