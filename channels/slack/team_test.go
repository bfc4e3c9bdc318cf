package slack_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/chiokernel/chio/approval"
	"github.com/chiokernel/chio/channels/slack"
	"github.com/chiokernel/chio/internal/keys"
	"github.com/chiokernel/chio/policy"
)

// teamPolicy is testPolicy pinned to the workspace T0TEAM.
var teamPolicy = strings.Replace(testPolicy, `channel = "#approvals"`, "channel = \"#approvals\"\nteam_id = \"T0TEAM\"", 1)

// clickFrom is clickBody sent by a user of userTeam, in the workspace
// team (Slack Connect: a shared channel shows the message to users of
// other organisations, whose clicks reach the same app).
func clickFrom(user slack.SlackUser, userTeam, team, action, approvalID string) []byte {
	form, _ := url.ParseQuery(string(clickBody(user, action, approvalID)))
	var p map[string]any
	_ = json.Unmarshal([]byte(form.Get("payload")), &p)
	u := p["user"].(map[string]any)
	if userTeam == "" {
		delete(u, "team_id")
	} else {
		u["team_id"] = userTeam
	}
	if team == "" {
		delete(p, "team")
	} else {
		p["team"] = map[string]any{"id": team, "domain": "example"}
	}
	b, _ := json.Marshal(p)
	return []byte(url.Values{"payload": {string(b)}}.Encode())
}

// A custodial click signs with the approver's key on the word of Slack's
// user id alone. With team_id set, a click by a user of another workspace
// (or one whose payload names no workspace) signs nothing, even when its
// user id is the approver's.
func TestCustodialClickFromAnotherWorkspaceIsRefused(t *testing.T) {
	w := worldWith(t, teamPolicy, []string{"refunds", "echo"}, "req-team-")
	out := w.refund(t)
	id := out.ApprovalRequestID
	w.posted(t, id)
	for _, c := range []struct{ name, userTeam, team string }{
		{"user of another organisation", "T0OTHER", "T0TEAM"},
		{"another workspace", "T0OTHER", "T0OTHER"},
		{"workspace named by the user only", "T0TEAM", "T0OTHER"},
		{"no workspace named", "", ""},
	} {
		before := len(w.ephemeralTo(leadID))
		if code := w.send(w.sign(clickFrom(lead, c.userTeam, c.team, slack.ActionApprove, id), w.clk.Now(), secret)); code != 200 {
			t.Fatalf("%s: click answered %d", c.name, code)
		}
		w.assertUntouched(t, id, out.RequestID)
		e := w.ephemeralTo(leadID)
		if len(e) != before+1 || !strings.Contains(e[len(e)-1], "workspace") {
			t.Fatalf("%s: ephemeral answers %q", c.name, e)
		}
	}
	// The pinned workspace's approver still decides with a click.
	if code := w.send(w.sign(clickFrom(lead, "T0TEAM", "T0TEAM", slack.ActionApprove, id), w.clk.Now(), secret)); code != 200 {
		t.Fatalf("click: %d", code)
	}
	if req := w.approval(t, id); req.Status != approval.StatusApproved || len(req.Votes) != 1 {
		t.Fatalf("not approved: %s, %d votes", req.Status, len(req.Votes))
	}
}

func TestSlackTeamIDIsChecked(t *testing.T) {
	a, _ := keys.Generate(nil)
	b, _ := keys.Generate(nil)
	parse := func(team string) error {
		text := strings.Replace(testPolicy, `channel = "#approvals"`, "channel = \"#approvals\"\nteam_id = \""+team+"\"", 1)
		_, err := policy.Parse([]byte(fmt.Sprintf(text, a.Public(), b.Public(), "http://127.0.0.1:1/api/")), "slack.toml")
		return err
	}
	for _, good := range []string{"T0TEAM", "T024BE7LH"} {
		if err := parse(good); err != nil {
			t.Fatalf("team_id %q refused: %v", good, err)
		}
	}
	for _, bad := range []string{"team-1", "t0team", "U0LEAD", "T", " T0TEAM", "T0TEAM\\n", "E0GRID42"} {
		if err := parse(bad); err == nil || !strings.Contains(err.Error(), "team_id") {
			t.Fatalf("team_id %q: got %v", bad, err)
		}
	}
}
