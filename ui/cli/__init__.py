"""The command line (``python main.py ...``): the commands, the question commands, output and progress bars."""
