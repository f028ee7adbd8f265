"""`jetson-env plan --to RELEASE`'s plan: judgement.py judges one host's facts against the
target row (pure), assembly.py probes the hosts and puts their plans together with the
commands that rebuild them, page.py writes the plan as a page for people."""
