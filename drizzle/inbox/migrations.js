import journal from './meta/_journal.json';
import m0000 from './0000_inbox.sql';
import m0001 from './0001_states_and_events.sql';
import m0002 from './0002_email_decisions.sql';
import m0003 from './0003_filter_indexes.sql';
import m0004 from './0004_retention.sql';
import m0005 from './0005_digests.sql';

  export default {
    journal,
    migrations: {
      m0000,
m0001,
m0002,
m0003,
m0004,
m0005
    }
  }
  