package service_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gocrawl/gocrawl/devtools/browsertest"
)

// TestPageInBrowser does in headless Chromium what a person does on the
// page: schedule a crawl (a bad cron expression first), watch its job's
// log, delete the schedule, cancel the job (graceful, then abort).
func TestPageInBrowser(t *testing.T) {
	t.Parallel()
	st := newSite(t, 7, 1)
	sv := startServer(t, t.TempDir(), nil)
	b := browsertest.New(t, 1200, 900)
	b.Navigate(sv.url + "/")

	fill := func(cron string) string {
		return fmt.Sprintf(`(() => {
			const f = document.getElementById("schedule");
			f.elements.cron.value = %q;
			f.elements.spider.value = "site";
			f.elements.args.value = "start_urls=%s";
			f.elements.settings.value = "SHUTDOWN_GRACE=600";
			f.querySelector("button[type=submit]").click();
			return true;
		})()`, cron, st.start())
	}
	var ok bool
	b.Eval(fill("61 * * * *"), &ok)
	var msg string
	waitFor(t, "the page to show the refusal", func() bool {
		b.Eval(`document.getElementById("error").textContent`, &msg)
		return msg != ""
	})
	if !strings.Contains(msg, "61 * * * *") {
		t.Errorf("error shown for a bad cron: %q", msg)
	}

	b.Eval(fill("@every 1s"), &ok)
	var schedID, jobID string
	waitFor(t, "the schedule's job to run", func() bool {
		_, scs := sv.call("GET", "/api/schedules", nil)
		list := scs["schedules"].([]any)
		if len(list) == 0 {
			return false
		}
		schedID = list[0].(map[string]any)["id"].(string)
		_, jobs := sv.call("GET", "/api/jobs?state=running&schedule="+schedID, nil)
		if js := jobs["jobs"].([]any); len(js) > 0 {
			jobID = js[0].(map[string]any)["id"].(string)
		}
		return jobID != ""
	})

	// Watch: the job's page shows its live log and its report.
	b.Navigate(sv.url + "/?job=" + jobID)
	var state string
	b.Eval(fmt.Sprintf(`document.querySelector('[data-job-row=%q]').dataset.state`, jobID), &state)
	if state != "running" {
		t.Errorf("the page shows the job %q, want running", state)
	}
	waitFor(t, "the log tail", func() bool {
		var log string
		b.Eval(`document.getElementById("log").textContent`, &log)
		return strings.Contains(log, "serving Prometheus metrics and the live report")
	})
	b.Eval(`document.getElementById("report") !== null && document.querySelector('[data-schedule]') !== null`, &ok)
	if !ok {
		t.Error("the job page lacks the report frame or the schedule row")
	}

	// Delete the schedule, then cancel the job: the first click stops it
	// gracefully (the button becomes Abort), the second aborts it.
	b.Eval(fmt.Sprintf(`document.querySelector('[data-delete-schedule=%q]').click(), true`, schedID), &ok)
	waitFor(t, "the schedule to be deleted", func() bool {
		_, scs := sv.call("GET", "/api/schedules", nil)
		return len(scs["schedules"].([]any)) == 0
	})
	waitFor(t, "the page to drop the deleted schedule", func() bool {
		b.Eval(`document.querySelector('[data-schedule]') === null`, &ok)
		return ok
	})
	cancel := fmt.Sprintf(`document.querySelector('[data-cancel=%q]')`, jobID)
	b.Eval(cancel+`.click(), true`, &ok)
	var label string
	waitFor(t, "the Abort button", func() bool {
		b.Eval(`(b => b ? b.textContent : "")(`+cancel+`)`, &label)
		return label == "Abort"
	})
	b.Eval(cancel+`.click(), true`, &ok)
	sv.waitState(jobID, "cancelled")
	waitFor(t, "the page to show the job cancelled", func() bool {
		b.Eval(fmt.Sprintf(`document.querySelector('[data-job-row=%q]').dataset.state`, jobID), &state)
		return state == "cancelled"
	})
	st.release()
	b.NoErrors()
}
