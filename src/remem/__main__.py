"""``python -m remem`` runs the command line."""

from remem.cli import main

if __name__ == "__main__":
    main()
