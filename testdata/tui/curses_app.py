"""A Python curses program for the prompt tests: the alternate screen,
repainted on KEY_RESIZE as curses programs do. Keys: w writes
$TUI_TARGET/<n>.txt, q quits. The screen shows only "ok" or "refused".
"""
import curses
import json
import os

target = os.environ.get("TUI_TARGET", "ASK")
log_path = os.environ.get("TUI_LOG", "/dev/null")


def main(scr):
    curses.curs_set(0)
    ops = []
    n = 0

    def draw():
        scr.erase()
        lines = ["APP python-curses", "%s Working… %d operations" % ("|/-\\"[n % 4], n)]
        lines += ["  op %d: write %s" % (o, "ok" if ok else "refused") for o, ok in ops[-8:]]
        lines.append("keys: w write · q quit")
        h, w = scr.getmaxyx()
        for i, l in enumerate(lines[: h - 1]):
            scr.addstr(i, 0, l[: w - 1])
        scr.refresh()

    draw()
    while True:
        k = scr.get_wch()
        if k == "q":
            return
        if k == curses.KEY_RESIZE:
            draw()
            continue
        if k == "w":
            n += 1
            code = ""
            try:
                with open("%s/%d.txt" % (target, n), "w") as f:
                    f.write("x")
                ok = True
            except OSError as e:
                ok, code = False, e.errno
            ops.append((n, ok))
            with open(log_path, "a") as f:
                f.write(json.dumps({"n": n, "what": "write", "ok": ok, "code": code}) + "\n")
            draw()


curses.wrapper(main)
