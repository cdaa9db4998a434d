"""The words synthetic training worlds (:mod:`m3agent.train.worlds`) are made of.

Every list here is disjoint from the names and content words of what we evaluate on: the mini M3-Bench
(``bench/m3mini``) and the demo episode (``m3agent/samples/episode.py``, ``tests/episode.py``). A word that
appears there (a name, an object, a place, a food, a number, a day) appears in none of these lists, so a
model trained on the worlds has never read an evaluation fact; ``tests/train/test_worlds.py`` parses those
files and checks it. Keep it so when adding words: no colours, numbers or days of the week either.

The lists are large enough that a few thousand worlds rarely repeat a combination: a world draws 3-4 names,
3-4 jobs with a workplace each, towns, an object and two places, something to count, plans, likes,
dislikes and a piece of advice.
"""

from __future__ import annotations

MEN = (
    "Oskar", "Bruno", "Rafael", "Dmitri", "Lorenzo", "Emeka", "Hiroshi", "Tariq", "Mateo", "Jonas",
    "Idris", "Kofi", "Leopold", "Soren", "Anton", "Cyril", "Dario", "Elias", "Florian", "Gideon",
    "Hamish", "Ignacio", "Jasper", "Laszlo", "Magnus", "Nikolai", "Olaf", "Pavel", "Quentin", "Rupert",
    "Silas", "Viktor", "Wendell", "Yusuf", "Zoltan", "Ambrose", "Barnaby", "Cedric", "Desmond", "Fergus",
    "Gustav", "Horace", "Joaquin", "Kenji", "Lucian", "Milo", "Orson", "Ronan", "Tobias", "Arturo",
    "Bernard", "Conrad", "Emil", "Frederik", "Hugo", "Ivan", "Julian", "Lionel", "Marco", "Nigel",
)

WOMEN = (
    "Ingrid", "Marisol", "Yuki", "Priya", "Annika", "Beatrix", "Camille", "Dagny", "Elodie", "Freya",
    "Greta", "Hana", "Imogen", "Juno", "Katya", "Leonie", "Mireille", "Noor", "Odile", "Paloma",
    "Tamsin", "Ursula", "Vesna", "Yara", "Zofia", "Agnes", "Bettina", "Clementine", "Delphine", "Esme",
    "Fiona", "Gwen", "Helga", "Ilse", "Jolene", "Kirsten", "Lucia", "Maren", "Nadia", "Petra",
    "Renata", "Sigrid", "Thea", "Valentina", "Wanda", "Zelda", "Amara", "Birgit", "Carmen", "Dorota",
    "Edith", "Flora", "Hedda", "Irene", "Judith", "Lena", "Magda", "Olga", "Pilar", "Selma",
)

#: job -> workplaces it is done at ("I work as a plumber at the harbour depot")
JOBS = {
    "plumber": ("the harbour depot", "a heating firm"),
    "carpenter": ("the timber yard", "a furniture workshop"),
    "pharmacist": ("the corner pharmacy", "a chemist's shop"),
    "architect": ("a design studio", "the planning bureau"),
    "electrician": ("the power station", "a lighting firm"),
    "dentist": ("a dental clinic", "the health centre"),
    "baker": ("the bakery on Elm Street", "a bread factory"),
    "veterinarian": ("the animal clinic", "a riding stable"),
    "firefighter": ("the fire station", "the airport fire service"),
    "florist": ("a flower shop", "the flower stall by the cathedral"),
    "translator": ("the embassy", "a publishing firm"),
    "accountant": ("a tax firm", "the savings bank"),
    "pilot": ("the regional airport", "a cargo airline"),
    "tailor": ("a clothing boutique", "the costume department of the opera"),
    "photographer": ("a photo studio", "the weekly magazine"),
    "journalist": ("the local paper", "a radio station"),
    "fisherman": ("the harbour", "a trawler fleet"),
    "beekeeper": ("a honey farm", "the botanical institute"),
    "lawyer": ("the courthouse", "a law firm"),
    "teacher": ("the primary school", "a language school"),
    "potter": ("a ceramics studio", "the craft centre"),
    "optician": ("an eyewear shop", "the eye clinic"),
    "engineer": ("the shipyard", "a bridge engineering firm"),
    "geologist": ("the mining institute", "a quarry"),
    "zookeeper": ("the zoo", "a wildlife sanctuary"),
    "cashier": ("the supermarket", "a petrol station"),
    "barber": ("a barbershop", "the salon on the square"),
    "welder": ("the steel mill", "a boatyard"),
    "courier": ("a parcel service", "the postal depot"),
    "sculptor": ("an art foundry", "the sculpture studio"),
    "astronomer": ("the observatory", "the space institute"),
    "paramedic": ("the ambulance service", "the emergency clinic"),
    "biologist": ("the marine institute", "a research laboratory"),
    "brewer": ("a craft brewery", "the cider mill"),
    "jeweller": ("a jewellery workshop", "the goldsmith on the square"),
    "tour guide": ("the castle museum", "a travel agency"),
    "glassblower": ("a glass studio", "the glassworks"),
    "locksmith": ("a hardware shop", "the security firm"),
    "surveyor": ("the land registry", "a construction firm"),
    "pianist": ("the philharmonic", "a music conservatory"),
    "butcher": ("the butcher's shop", "a meat counter at the covered arcade"),
    "receptionist": ("the grand hotel", "a dental practice"),
}

TOWNS = (
    "Galway", "Bergen", "Porto", "Tampere", "Ghent", "Lyon", "Krakow", "Valencia", "Salzburg", "Aarhus",
    "Bruges", "Cork", "Dundee", "Eindhoven", "Faro", "Genoa", "Hobart", "Innsbruck", "Kyoto", "Leeds",
    "Malaga", "Nantes", "Odense", "Perth", "Quebec", "Reykjavik", "Seville", "Trieste", "Uppsala", "Verona",
    "Wellington", "Zagreb", "Antwerp", "Basel", "Coimbra", "Dresden", "Gdansk", "Haarlem", "Izmir", "Jaipur",
    "Kaunas", "Lucerne", "Mombasa", "Nagoya", "Oaxaca", "Pune", "Riga", "Tallinn", "Utrecht", "Vilnius",
    "Yokohama", "Zurich", "Adelaide", "Bilbao", "Cusco", "Durban", "Edinburgh", "Marseille", "Naples", "Oslo",
)

#: things a person puts somewhere and later moves (singular: "Where is the brass compass?")
OBJECTS = (
    "passport", "wallet", "brass compass", "sewing kit", "harmonica", "flashlight", "camera", "wristwatch",
    "phone charger", "stapler", "telescope", "thermos flask", "chess set", "tape measure", "hammer",
    "screwdriver", "penknife", "sketchbook", "laptop", "ukulele", "yoga mat", "tennis racket",
    "first aid kit", "silver ring", "fountain pen", "alarm clock", "rolling pin", "magnifying glass",
    "hairdryer", "toolbox", "scrapbook", "kettle", "lantern", "knitting needle case", "diary",
    "spare lightbulb", "birthday card", "tripod", "metronome", "pepper grinder",
)

#: where things are put: (preposition, place)
PLACES = (
    ("in", "the cedar chest"), ("on", "the windowsill"), ("under", "the sofa"), ("behind", "the bookcase"),
    ("in", "the wardrobe"), ("on", "the top shelf of the pantry"), ("in", "the glovebox"),
    ("in", "the basement"), ("in", "the attic"), ("on", "the piano"), ("in", "the laundry basket"),
    ("under", "the stairs"), ("in", "the cupboard above the sink"), ("on", "the mantelpiece"),
    ("in", "the shoebox under the bed"), ("in", "the tool shed"), ("on", "the coat rack"),
    ("in", "the filing cabinet"), ("on", "the balcony"), ("on", "the dresser"), ("in", "the linen closet"),
    ("on", "the nightstand"), ("in", "the wicker basket"), ("behind", "the curtains"), ("in", "the safe"),
    ("on", "the bathroom shelf"), ("in", "the hallway closet"), ("on", "the workbench"),
    ("in", "the antique desk"), ("in", "the storage room"), ("on", "the freezer"),
    ("in", "the sideboard"), ("under", "the armchair"), ("in", "the biscuit tin"), ("in", "the cellar"),
    ("on", "the tall bookshelf"), ("in", "the cabinet beside the stove"),
    ("in", "the locker at the gym"), ("on", "the porch"), ("in", "the utility room"),
    ("next to", "the radiator"), ("beside", "the tumble dryer"), ("near", "the fireplace"),
    ("inside", "the ottoman"), ("at the back of", "the carport"), ("beneath", "the floorboards"),
    ("on top of", "the chest freezer"), ("behind", "the boiler"), ("inside", "the steamer trunk"),
    ("beside", "the log basket"), ("next to", "the rain barrel"), ("under", "the doormat"),
)

#: things bought in batches and counted ("I bought three lemons ... two more lemons")
COUNTABLES = (
    "lemons", "candles", "postcards", "light bulbs", "pencils", "peaches", "batteries", "tulips",
    "jars of honey", "loaves of bread", "bars of soap", "rolls of twine", "balls of wool", "cans of paint",
    "bottles of olive oil", "cucumbers", "avocados", "pears", "plums", "mangoes", "coconuts", "croissants",
    "bagels", "muffins", "towels", "plates", "mugs", "spoons", "ferns", "stamps", "marbles", "buttons",
    "envelopes", "paintbrushes", "crayons", "balloons", "picture frames",
    "sacks of potatoes", "packets of seeds",
)

#: where batches are bought ("at the corner shop")
SHOPS = (
    "the corner shop", "the grocer", "the hardware store", "the stationery shop", "the department store",
    "the farm shop", "the pound shop", "the craft fair", "the hypermarket", "the village store",
    "the wholesale warehouse", "the fruit stall", "the charity shop", "the pharmacy counter",
)

#: what people plan to do ("Tomorrow I will repaint the fence")
PLANS = (
    "repaint the fence", "visit the aquarium", "mend the squeaky gate", "clean the gutters",
    "sign up for pottery classes", "take the ferry to the island", "assemble a trampoline",
    "hang blinds in the den", "learn to juggle", "sell the rowing machine", "clean the skylights",
    "try the noodle bar downtown", "climb the hill behind the village", "visit the cheese fair",
    "repair the roof tiles", "sort the recycling", "polish the silverware", "tidy the loft",
    "drive to the coast", "attend a salsa class", "photograph the sunrise", "visit the planetarium",
    "knit a scarf", "make rhubarb chutney", "rearrange the furniture", "mow the lawn",
    "feed the ducks at the pond", "retile the shower", "start a vegetable patch",
    "volunteer at the animal shelter", "register for the marathon", "collect a parcel from the depot",
    "host a quiz night", "visit the lighthouse", "varnish the decking", "go canoeing at the reservoir",
    "repair the leaking tap", "sort the holiday snaps", "take the hamster to the vet",
    "watch the fireworks at the harbour",
)

#: things people love or hate ("I love sailing", "I can't stand thunderstorms"); each is used once a world
PREFERENCES = (
    "sailing", "jazz", "spicy curry", "crossword puzzles", "rainy days", "board games", "horror films",
    "loud concerts", "pineapple on pizza", "country music", "opera", "thunderstorms", "science fiction novels",
    "karaoke", "olives", "liquorice", "dark chocolate", "iced coffee", "cats", "snakes", "heights",
    "spiders", "long queues", "rush hour traffic", "magic tricks", "ballet", "bird watching", "origami", "backgammon",
    "pilates", "mountain biking", "marmalade", "garlic", "sushi", "oysters", "crowds", "idle chatter", "cricket",
    "rugby", "camping", "cold showers", "poetry", "reality television", "arcade games", "folk dancing",
    "jogging", "cabbage soup", "musicals", "fishing trips", "waterfalls",
)

#: relations between two people of a world, symmetric ("Hana is my cousin"; "Hana and I are cousins")
RELATIONS = (
    ("cousin", "cousins"), ("neighbour", "neighbours"), ("flatmate", "flatmates"),
    ("classmate", "classmates"), ("teammate", "teammates"), ("business partner", "business partners"),
    ("childhood friend", "childhood friends"), ("colleague", "colleagues"),
)

#: general knowledge the video states: (situation, what to do) -> "When you paint a room, open the windows."
ADVICE = (
    ("paint a bedroom", "ventilate it well"),
    ("sharpen a chisel", "hold the blade at a low angle"),
    ("store fresh bread", "wrap it in a paper bag"),
    ("iron a silk shirt", "choose the lowest heat setting"),
    ("hike in the mountains", "tell someone your route"),
    ("lift a heavy box", "bend your knees and hold your back straight"),
    ("clean a cast iron pan", "dry it right away and rub in a little oil"),
    ("cycle at night", "wear bright clothes and switch on lights"),
    ("repot a cactus", "wear thick gloves"),
    ("jog in winter", "dress in thin layers"),
    ("revise for an exam", "take a short break each hour"),
    ("pack a suitcase", "roll your clothes rather than folding them"),
    ("paint with oils", "allow each layer to dry fully"),
    ("steam rice", "rinse the grains first"),
    ("grind coffee beans", "grind only what you need for that pot"),
    ("feel dizzy", "sit down and breathe slowly"),
    ("get a splinter", "pull it out in the direction it went in"),
    ("try on shoes", "shop for them at dusk, when your feet are largest"),
    ("store potatoes", "store them somewhere dark"),
    ("sleep badly", "avoid screens for an hour at bedtime"),
    ("read on a screen for hours", "look into the distance regularly"),
    ("climb a ladder", "hold on with a hand at all times"),
    ("dye fabric", "rinse it separately the first few times"),
    ("thaw frozen meat", "thaw it slowly overnight"),
    ("hang a picture", "find the stud with a magnet"),
    ("drive in fog", "switch to dipped headlights"),
    ("sprain an ankle", "rest it and raise it on a cushion"),
    ("get stung by a bee", "scrape the sting out sideways"),
    ("make cut flowers last longer", "trim the stems at an angle"),
    ("polish leather boots", "brush off the dust first"),
    ("light a campfire", "stack dry twigs in a teepee"),
    ("season a salad", "add the salt just as you serve it"),
    ("knead dough", "stop once it springs back under your finger"),
    ("stretch after exercise", "hold each stretch for half a minute"),
    ("catch a cold", "rest and stay warm"),
    ("fold a fitted sheet", "tuck the corners into each other"),
    ("mix a sponge cake", "sift the flour to remove lumps"),
    ("photograph a sunset", "disable the flash"),
    ("carry a heavy rucksack", "tighten the hip belt"),
    ("learn a language", "practise a little daily"),
)

# ------------------------------------------------------------------------------------------------ on-screen text
#: what a sign on a wall numbers ("GATE 14", "PIER 6"): read off the screen, never said
SIGNS = ("Gate", "Dock", "Bay", "Aisle", "Pier", "Berth", "Wing", "Ward", "Zone", "Booth", "Track", "Lane",
         "Hangar", "Vault", "Quay", "Annex", "Tower", "Terrace", "Cabin", "Jetty", "Sector", "Corridor")
#: where a notice sends people ("Collect parcels at kiosk 4")
COUNTERS = ("till", "counter", "kiosk", "hatch", "bureau", "turnstile", "pavilion", "reception point")
#: what opens at the time an opening-hours slide says
FACILITIES = ("museum", "swimming pool", "observatory", "aquarium", "archive", "planetarium", "sports centre", "sauna",
              "chapel", "arena", "ice rink", "zoo shop", "greenhouse", "climbing wall", "velodrome")
#: what a news caption announces ("Gale warning at dawn")
EVENTS = ("Gale warning", "Heavy snow", "Free concert", "Street parade", "Power outage", "Ferry strike",
          "Fireworks", "Flood warning", "Marathon", "Charity auction", "Rowing regatta", "Circus parade",
          "Thick fog", "Hail storm", "Bridge repairs", "Gas leak", "Lunar eclipse", "Kite festival")
