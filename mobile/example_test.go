package mobile_test

import (
	"fmt"
	"log"
	"os"
	"os/signal"

	"github.com/toolgate/toolgate/mobile"
)

// battery answers the tools of the example.
type battery struct{}

func (battery) Handle(callID, toolName, argsJSON string) (string, error) {
	if toolName != "battery_level" {
		return "", mobile.NewToolError(mobile.CodeToolNotFound, "unknown tool "+toolName, "")
	}
	return fmt.Sprintf(`{"percent": %d}`, 87), nil
}

// An app offers one read-only tool and keeps its session in a file, so a
// restart resumes it and answers the calls still open.
func Example() {
	client := mobile.NewClient("http://127.0.0.1:8080")
	client.SetSessionStore(mobile.NewFileSessionStore("toolgate-session.json"))
	client.SetClientInfo("battery-app", "1.0", "desktop")

	opts := mobile.NewToolOptions()
	opts.ReadOnly = true
	opts.TimeoutMS = 10000
	if err := client.RegisterToolWithOptions("battery_level", "Battery level in percent",
		`{"type":"object","properties":{}}`, opts); err != nil {
		log.Fatal(err)
	}
	client.SetHandler(battery{})
	if err := client.Connect(); err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	<-stop
}
