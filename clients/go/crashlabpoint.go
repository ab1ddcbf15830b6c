// Package crashlabpoint is crashlab's point protocol for Go (standard library only;
// docs/own-system.md). Point("relay.after-publish") appends one JSON line to $CRASHLAB_EVENTS in
// one write(2), and crashes there when $CRASHLAB_CRASH_AT names this point and hit.
package crashlabpoint

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

var hits, mu = map[string]int{}, sync.Mutex{}

type line struct { // a struct keeps the protocol's field order; a map's keys would be sorted
	Event string `json:"event"`
	Point string `json:"point"`
	Hit   int    `json:"hit"`
	Mode  string `json:"mode,omitempty"`
}

func event(path string, fields line) { // without $CRASHLAB_EVENTS the open fails: nothing written
	text, _ := json.Marshal(fields)
	if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
		f.Write(append(text, '\n'))
		f.Close()
	}
}

// Point announces the point name and crashes there, as $CRASHLAB_CRASH_MODE says, when armed.
func Point(name string) {
	mu.Lock()
	defer mu.Unlock()
	hits[name]++
	hit, path := hits[name], os.Getenv("CRASHLAB_EVENTS")
	event(path, line{"point", name, hit, ""})
	at, n, _ := strings.Cut(os.Getenv("CRASHLAB_CRASH_AT")+"@1", "@") // NAME alone is NAME@1
	n, _, _ = strings.Cut(n, "@")
	want, err := strconv.Atoi(n)
	if at != name || err != nil || want != hit {
		return
	}
	mode := os.Getenv("CRASHLAB_CRASH_MODE")
	if mode == "" {
		mode = "exit"
	}
	event(path, line{"crash", name, hit, mode})
	if sig, ok := map[string]syscall.Signal{"abort": syscall.SIGABRT, "kill": syscall.SIGKILL, "hang": 0}[mode]; ok {
		var dfl [4]uintptr // SIG_DFL: the Go runtime's own SIGABRT handler would exit 2 instead
		syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
		syscall.Kill(os.Getpid(), sig) // signal 0 (hang) sends nothing
		time.Sleep(time.Hour)          // until the signal lands, or crashlab kills a hang
	}
	os.Exit(73)
}
