"""The doctor on a fleet (`doctor --inventory`): inventory.py runs it on every host of an
Ansible inventory through Ansible, report.py puts the hosts' reports together (its --json),
page.py writes the fleet as a page for people."""
