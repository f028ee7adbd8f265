"""The commands of `jetson-env`, one module each (as pip and hatch arrange theirs): each
owns its arguments (`register(subparsers)`) and its flow (`run(args, term, matrix)`).
cli.py parses the global options and dispatches."""

from jetson_env.commands import bundle, doctor, images, info, matrix, plan, provision

COMMANDS = (matrix, info, doctor, provision, bundle, plan, images)  # the order --help lists
