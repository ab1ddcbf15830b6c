// Package crashlabpoint is crashlab's point protocol for Go (standard library only;
// docs/own-system.md). Call Point("relay.after-publish") where a crash matters: under
// crashlab it appends one JSON line to $CRASHLAB_EVENTS in one write(2), and crashes there
// when $CRASHLAB_CRASH_AT names this point and hit, as $CRASHLAB_CRASH_MODE says.
package crashlabpoint

import (
	"encoding/json"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

var mu sync.Mutex
var hits = map[string]int{}
func event(path string, fields map[string]any) {
	line, _ := json.Marshal(fields)
	if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
		f.Write(append(line, '\n'))
		f.Close()
	}
}
// Point announces the point name and crashes there when the harness armed it.
func Point(name string) {
	mu.Lock()
	defer mu.Unlock()
	hits[name]++
	hit, path := hits[name], os.Getenv("CRASHLAB_EVENTS")
	if path != "" {
		event(path, map[string]any{"event": "point", "point": name, "hit": hit})
	}
	at, n, found := strings.Cut(os.Getenv("CRASHLAB_CRASH_AT"), "@")
	want, err := strconv.Atoi(n)
	if !found {
		want, err = 1, nil
	}
	if at != name || err != nil || want != hit {
		return
	}
	mode := os.Getenv("CRASHLAB_CRASH_MODE")
	if mode == "" {
		mode = "exit"
	}
	if path != "" {
		event(path, map[string]any{"event": "crash", "point": name, "hit": hit, "mode": mode})
	}
	signals := map[string]syscall.Signal{"abort": syscall.SIGABRT, "kill": syscall.SIGKILL}
	if sig, ok := signals[mode]; ok {
		signal.Reset(sig) // the Go runtime's own SIGABRT handler would exit 2
		syscall.Kill(os.Getpid(), sig)
	} else if mode == "hang" {
		time.Sleep(time.Hour)
	}
	os.Exit(73)
}
