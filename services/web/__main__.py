"""python -m services.web: run the browser gateway."""

from services.web.app import main

if __name__ == "__main__":
    main()
